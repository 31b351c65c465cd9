"""API keys against the real schema: the runtime role authenticates through
``haki_authenticate`` only, revocation is effective on the next call, listings never hold
the key; ``haki keys create --usage-plan-id`` puts the project's usage key in the usage plan
(API Gateway faked by moto) or, when AWS refuses, makes no key."""

import json
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterator

import boto3
import psycopg
import pytest
from moto import mock_aws

from haki.db import Database, Role
from haki.errors import ProjectOfAnotherOrg, Unauthorized, ValidationFailed
from haki.keys import authenticate, hash_key, usage_key
from haki.settings import get_settings
from haki_local.admin import (
    create_key,
    create_project,
    generate_key,
    list_keys,
    list_projects,
    revoke_key,
)
from haki_local.cli import main


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
    # Ids the API could not name: another spelling of a name, an invisible character.
    for project in (unicodedata.normalize("NFD", "projé"), "pro\u200bject", "p\x85"):
        with pytest.raises(ValidationFailed, match="NFC"):
            create_key(owner_db, org_id="o", project_id=project, create_project=True)


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


@pytest.fixture
def admin_cli(db_urls: dict[Role, str], monkeypatch: pytest.MonkeyPatch,
              capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[..., tuple[int, str, str]]]:
    """``haki ...`` in this process, as the owner of the test database, with API Gateway faked
    by moto (the same fake for every call of the test): (exit code, stdout, stderr)."""
    monkeypatch.setenv("HAKI_DATABASE_URL", db_urls[Role.OWNER])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    get_settings.cache_clear()

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    try:
        with mock_aws():
            yield run
    finally:
        get_settings.cache_clear()


def _plan_keys(plan_id: str) -> list[dict[str, str]]:
    gateway = boto3.client("apigateway")
    in_plan = gateway.get_usage_plan_keys(usagePlanId=plan_id)["items"]
    return [{"id": k["id"], "value": k["value"]} for k in in_plan]


def _api_keys_with(value: str) -> list[dict[str, object]]:
    items = boto3.client("apigateway").get_api_keys(includeValues=True)["items"]
    return [k for k in items if k["value"] == value]


def test_create_registers_the_projects_usage_key_in_the_usage_plan_once(
    admin_cli: Callable[..., tuple[int, str, str]], app_db: Database, project_id: str
) -> None:
    plan = boto3.client("apigateway").create_usage_plan(name="haki-default")["id"]
    expected = usage_key(project_id)

    def create_key_by_cli() -> str:
        code, out, err = admin_cli("keys", "create", "--org", "org-test", "--project",
                                   project_id, "--usage-plan-id", plan)
        assert code == 0, err
        key = re.search(r"^key:\s+(hk_\S+)$", out, re.M)
        assert key is not None
        assert authenticate(app_db, key.group(1)).project_id == project_id
        return out

    out = create_key_by_cli()
    [api_key] = _api_keys_with(expected)
    assert api_key["enabled"] is True and api_key["name"] == project_id
    assert _plan_keys(plan) == [{"id": api_key["id"], "value": expected}]
    assert (f"usage key: {expected} (API key {api_key['id']} (created), added to usage plan "
            f"{plan})") in out

    # A second key of the project: the same API key, already in the plan, nothing added.
    out = create_key_by_cli()
    assert f"(API key {api_key['id']} (existing), already in usage plan {plan})" in out
    assert len(_api_keys_with(expected)) == 1
    assert _plan_keys(plan) == [{"id": api_key["id"], "value": expected}]


def test_an_api_key_registered_by_hand_is_reused(
    admin_cli: Callable[..., tuple[int, str, str]], project_id: str
) -> None:
    """The manual fallback of docs/deploy.md done first, under another name, outside the plan."""
    gateway = boto3.client("apigateway")
    plan = gateway.create_usage_plan(name="haki-default")["id"]
    other_plan = gateway.create_usage_plan(name="gold")["id"]
    value = usage_key(project_id)
    by_hand = gateway.create_api_key(name="acme-by-hand", value=value, enabled=True)["id"]
    gateway.create_usage_plan_key(usagePlanId=other_plan, keyId=by_hand, keyType="API_KEY")

    code, out, err = admin_cli("keys", "create", "--org", "acme", "--project", project_id,
                               "--create-project", "--usage-plan-id", plan)
    assert code == 0, err
    assert f"(API key {by_hand} (existing), added to usage plan {plan})" in out
    assert [k["id"] for k in _api_keys_with(value)] == [by_hand]
    assert _plan_keys(plan) == [{"id": by_hand, "value": value}]


def test_an_aws_failure_is_one_error_line_and_makes_no_key(
    admin_cli: Callable[..., tuple[int, str, str]], owner_db: Database, project_id: str
) -> None:
    code, out, err = admin_cli("keys", "create", "--org", "acme", "--project", project_id,
                               "--create-project", "--usage-plan-id", "no-such-plan")
    assert code != 0 and out == ""
    assert "Traceback" not in err
    [line] = err.strip().splitlines()
    error = json.loads(line)["error"]
    assert error["code"] == "usage_plan_error"
    assert "no-such-plan" in error["message"] and "NotFoundException" in error["message"]
    assert _api_keys_with(usage_key(project_id)) == []
    assert list_keys(owner_db, project_id=project_id) == []
    assert project_id not in {p.project_id for p in list_projects(owner_db)}
