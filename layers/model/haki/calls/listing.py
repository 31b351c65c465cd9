"""``GET /v1/calls``: a project's context calls over the retention window (older ones are
dropped with their day partition), newest first, searched and filtered, keyset-paged."""

from haki.calls.models import CallListRequest, CallPage, CallSummary
from haki.db import Database
from haki.memory.api import check_scope
from haki.memory.pagination import read_page

#: The calls of one project (context_calls_created_idx, or context_calls_scope_idx for one
#: subject), newest first after the cursor, each optional filter off when its parameter is
#: NULL. The search is a case-insensitive substring of the query or the subject id
#: (``strpos``: no pattern syntax to escape); a warning is matched by its code (the text
#: before its colon) in the stored packet. A call's feedback (its missing ids, the feedback
#: filter) is read by the call_feedback primary key.
LIST_CALLS = """
SELECT trace_id, subject_id, query, purpose, budget_tokens, token_count, status, empty_reason,
       ARRAY(SELECT jsonb_array_elements_text(packet->'warnings')) AS warnings,
       facts_served, episodes_served, candidates, latency_ms, created_at,
       (SELECT count(DISTINCT m) FROM call_feedback AS f, unnest(f.missing) AS m
        WHERE f.project_id = c.project_id AND f.trace_id = c.trace_id
          AND f.call_created_at = c.created_at) AS missing_reported
FROM context_calls AS c
WHERE project_id = %(project_id)s
  AND (%(subject_id)s::text IS NULL OR subject_id = %(subject_id)s)
  AND (%(q)s::text IS NULL OR strpos(lower(query), lower(%(q)s)) > 0
       OR strpos(lower(subject_id), lower(%(q)s)) > 0)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(warning)s::text IS NULL OR EXISTS (
      SELECT FROM jsonb_array_elements_text(packet->'warnings') AS w
      WHERE split_part(w, ':', 1) = %(warning)s))
  AND (%(empty_reason)s::text IS NULL
       OR (%(empty_reason)s = 'served' AND empty_reason IS NULL)
       OR empty_reason = %(empty_reason)s)
  AND (%(purpose)s::text IS NULL OR purpose = %(purpose)s)
  AND (%(feedback)s::text IS NULL OR EXISTS (
      SELECT FROM call_feedback AS f
      WHERE f.project_id = c.project_id AND f.trace_id = c.trace_id
        AND f.call_created_at = c.created_at
        AND (%(feedback)s = 'any' OR cardinality(f.missing) > 0)))
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(after_at)s::timestamptz IS NULL
       OR (created_at, trace_id) < (%(after_at)s, %(after_id)s))
ORDER BY created_at DESC, trace_id DESC
LIMIT %(limit)s
"""


def list_calls(db: Database, project_id: str, request: CallListRequest) -> CallPage:
    """One page of the project's calls that match every filter of ``request``, newest first."""
    check_scope(project_id, request)
    calls, next_cursor = read_page(db, project_id, LIST_CALLS, request, view=CallSummary,
                                   sort_key=("created_at", "trace_id"))
    return CallPage(calls=calls, next_cursor=next_cursor)
