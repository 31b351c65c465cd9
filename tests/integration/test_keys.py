"""API keys against the real schema: the runtime role authenticates through
``haki_authenticate`` only, revocation is effective on the next call, listings never hold
the key."""

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from haki.db import Database, Role
from haki.errors import Unauthorized, ValidationFailed
from haki.keys import authenticate, create_key, generate_key, hash_key, list_keys, revoke_key


@pytest.fixture
def owner_db(db_urls: dict[Role, str]) -> Iterator[Database]:
    db = Database(db_urls[Role.OWNER])
    yield db
    db.close()


def test_created_key_authenticates_to_its_project_only(
    owner_db: Database, app_db: Database, project_id: str
) -> None:
    new = create_key(owner_db, org_id="org-1", project_id=project_id, label="ci")
    identity = authenticate(app_db, new.key)
    assert identity.project_id == project_id and identity.org_id == "org-1"
    assert identity.key_id == new.info.id


def test_only_the_hash_and_a_prefix_are_stored(
    owner_db: Database, owner_conn: psycopg.Connection, project_id: str
) -> None:
    new = create_key(owner_db, org_id="o", project_id=project_id)
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
    new = create_key(owner_db, org_id="o", project_id=project_id)
    authenticate(app_db, new.key)
    revoked = revoke_key(owner_db, new.info.id)
    assert revoked is not None and revoked.revoked_at is not None
    with pytest.raises(Unauthorized):
        authenticate(app_db, new.key)
    again = revoke_key(owner_db, new.info.id)
    assert again is not None and again.revoked_at == revoked.revoked_at
    assert revoke_key(owner_db, uuid.uuid4()) is None


def test_list_is_masked_and_filters_by_project(owner_db: Database, project_id: str) -> None:
    first = create_key(owner_db, org_id="o", project_id=project_id, label="a")
    create_key(owner_db, org_id="o", project_id=project_id + "-other")
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
