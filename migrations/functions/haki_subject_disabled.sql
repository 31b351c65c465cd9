-- Whether POST /v1/forget `disable` disabled this subject: every arm then serves nothing of
-- it. Its arguments are the call's parameters only, so in an arm's WHERE clause it is a
-- one-time filter on top of the same plan (a primary-key probe of disabled_subjects).
CREATE OR REPLACE FUNCTION haki_subject_disabled(p_project_id text, p_subject_id text)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT EXISTS (SELECT 1 FROM disabled_subjects AS d
                   WHERE d.project_id = p_project_id AND d.subject_id = p_subject_id)
$$;
REVOKE ALL ON FUNCTION haki_subject_disabled(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_subject_disabled(text, text) TO haki_app;
