"""API keys against the real schema: the runtime role authenticates through
``haki_authenticate`` only, revocation is effective on the next call, listings never hold
the key."""

import uuid

import psycopg
import pytest

from haki.db import Database
from haki.errors import ProjectOfAnotherOrg, Unauthorized, ValidationFailed
from haki.keys import authenticate, hash_key
from haki_local.admin import (
    create_key,
    create_project,
    generate_key,
    list_keys,
    list_projects,
    revoke_key,
)


def test_created_key_authenticates_to_its_project_only(
    owner_db: Database, app_db: Database, project_id: str
) -> None:
    new = create_key(owner_db, org_id="org-test", project_id=project_id, label="ci",
                     create_project=True)
    identity = authenticate(app_db, new.key)
    assert identity.project_id == project_id and identity.org_id == "org-test"
    assert identity.key_id == new.info.id


def test_only_the_hash_and_a_prefix_are_stored(
    owner_db: Database, owner_conn: psycopg.Connection, project_id: str
) -> None:
    new = create_key(owner_db, org_id="org-test", project_id=project_id, create_project=True)
    row = owner_conn.execute(
        "SELECT key_hash, prefix FROM api_keys WHERE id = %s", (new.info.id,)).fetchone()
    assert row == (hash_key(new.key), new.key[:10])
    stored = owner_conn.execute(
        "SELECT count(*) FROM api_keys WHERE key_hash = %s OR prefix = %s OR label = %s",
        (new.key, new.key, new.key)).fetchone()
    assert stored == (0,)


def test_unknown_malformed_and_missing_keys_are_unauthorized(app_db: Database) -> None:
    for key in (generate_key(), "hk_nope", "", None):
        with pytest.raises(Unauthorized):
            authenticate(app_db, key)


def test_revocation_is_effective_on_the_next_call(
    owner_db: Database, app_db: Database, project_id: str
) -> None:
    new = create_key(owner_db, org_id="org-test", project_id=project_id, create_project=True)
    authenticate(app_db, new.key)
    revoked = revoke_key(owner_db, new.info.id)
    assert revoked is not None and revoked.revoked_at is not None
    with pytest.raises(Unauthorized):
        authenticate(app_db, new.key)
    again = revoke_key(owner_db, new.info.id)
    assert again is not None and again.revoked_at == revoked.revoked_at
    assert revoke_key(owner_db, uuid.uuid4()) is None


def test_list_is_masked_and_filters_by_project(owner_db: Database, project_id: str) -> None:
    first = create_key(owner_db, org_id="o", project_id=project_id, label="a",
                       create_project=True)
    create_key(owner_db, org_id="o", project_id=project_id + "-other", create_project=True)
    listed = list_keys(owner_db, project_id=project_id)
    assert [k.id for k in listed] == [first.info.id]
    assert listed[0].masked == first.key[:10] + "…"
    assert first.key not in repr(listed)


def test_runtime_role_cannot_read_api_keys(app_db: Database) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege), app_db.transaction() as conn:
        conn.execute("SELECT key_hash FROM api_keys")


def test_scope_ids_are_bounded(owner_db: Database) -> None:
    with pytest.raises(ValidationFailed):
        create_key(owner_db, org_id="", project_id="p")
    with pytest.raises(ValidationFailed):
        create_key(owner_db, org_id="o", project_id="p" * 129)


def test_a_project_belongs_to_one_org_and_keys_follow_it(
    owner_db: Database, app_db: Database, project_id: str
) -> None:
    """The audit's scenario: another org asks for a key to a project it does not own."""
    theirs = f"{project_id}-acme"
    create_project(owner_db, org_id="acme", project_id=theirs)
    with pytest.raises(ProjectOfAnotherOrg) as refused:
        create_key(owner_db, org_id="evil-corp", project_id=theirs)
    assert refused.value.code == "project_of_another_org" and refused.value.status == 409
    with pytest.raises(ProjectOfAnotherOrg):
        create_key(owner_db, org_id="evil-corp", project_id=theirs, create_project=True)
    with pytest.raises(ProjectOfAnotherOrg):
        create_project(owner_db, org_id="evil-corp", project_id=theirs)
    assert [k for k in list_keys(owner_db, project_id=theirs)] == []
    # An unknown project needs to be created on purpose; its own org then gets keys.
    with pytest.raises(ValidationFailed, match="--create-project"):
        create_key(owner_db, org_id="acme", project_id=f"{project_id}-new")
    key = create_key(owner_db, org_id="acme", project_id=theirs).key
    assert authenticate(app_db, key).org_id == "acme"
    assert create_project(owner_db, org_id="acme", project_id=theirs).org_id == "acme"
    assert theirs in {p.project_id for p in list_projects(owner_db)}
