"""The migration custom resource handler: secret → connection string, and request types.

Secrets Manager is faked by moto. The migration runner itself is replaced by a recorder:
what it does to a database is tested against a real PostgreSQL (tests/integration).
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from psycopg.conninfo import conninfo_to_dict

from functions.migrate import app
from haki.errors import ConfigurationError, MigrationError
from haki_aws import trust

SECRET = {
    "engine": "postgres",
    "host": "haki-db.abc123.eu-west-1.rds.amazonaws.com",
    "port": 5432,
    "dbname": "haki",
    "username": "haki_owner",
    "password": "p@ss word'with\"quotes",
}


@pytest.fixture(autouse=True)
def rds_ca_bundle(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The layer's RDS CA bundle (``make rds-ca``), as a stand-in file."""
    bundle = tmp_path / "rds-ca-bundle.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(trust, "RDS_CA_BUNDLE", bundle)
    return bundle


@pytest.fixture
def secret_arn(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        client = boto3.client("secretsmanager")
        created = client.create_secret(Name="haki/owner", SecretString=json.dumps(SECRET))
        yield created["ARN"]


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the migration runner; record the connection strings it is given."""
    calls: list[str] = []

    def apply(conninfo: str) -> list[str]:
        calls.append(conninfo)
        return ["0001_extension_and_roles.sql", "0002_facts_and_events.sql"]

    monkeypatch.setattr(app, "apply_migrations", apply)
    return calls


def _event(request: str, secret_arn: str, **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request,
        "ResourceProperties": {"SecretArn": secret_arn, "LayerVersionArn": "arn:layer:1"},
        **extra,
    }


def test_secret_becomes_a_verified_tls_owner_connection(
    secret_arn: str, rds_ca_bundle: Path
) -> None:
    params = conninfo_to_dict(app.owner_conninfo(app.read_secret(secret_arn)))
    assert params["host"] == SECRET["host"]
    assert params["port"] == "5432"
    assert params["dbname"] == "haki"
    assert params["user"] == "haki_owner"
    assert params["password"] == SECRET["password"]  # quoting survives the round trip
    assert params["sslmode"] == "verify-full" and params["sslrootcert"] == str(rds_ca_bundle)


def test_a_layer_without_the_rds_bundle_fails_the_deploy(
    secret_arn: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(trust, "RDS_CA_BUNDLE", tmp_path / "absent.pem")
    with pytest.raises(ConfigurationError, match="make rds-ca"):
        app.owner_conninfo(app.read_secret(secret_arn))


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_create_and_update_apply_migrations_as_the_owner(
    secret_arn: str, runner: list[str], request_type: str
) -> None:
    extra = {"PhysicalResourceId": app.PHYSICAL_ID} if request_type == "Update" else {}
    response = app.handler(_event(request_type, secret_arn, **extra), None)
    assert response == {"PhysicalResourceId": app.PHYSICAL_ID, "Data": {"AppliedCount": 2}}
    (conninfo,) = runner
    assert conninfo_to_dict(conninfo)["user"] == "haki_owner"


def test_delete_keeps_the_schema_and_reads_no_secret(secret_arn: str, runner: list[str]) -> None:
    # The secret named does not exist: reading it would raise, so success proves none was read.
    event = _event("Delete", secret_arn + "-gone")
    event["PhysicalResourceId"] = app.PHYSICAL_ID
    assert app.handler(event, None) == {"PhysicalResourceId": app.PHYSICAL_ID}
    assert runner == []


def test_a_failed_migration_fails_the_deploy(
    secret_arn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(conninfo: str) -> list[str]:
        raise MigrationError("migration 0008_x.sql failed and was rolled back: boom")

    monkeypatch.setattr(app, "apply_migrations", fail)
    with pytest.raises(MigrationError, match=r"0008_x\.sql"):
        app.handler(_event("Create", secret_arn), None)


def test_an_unreadable_secret_fails_the_deploy(secret_arn: str, runner: list[str]) -> None:
    with pytest.raises(ClientError):
        app.handler(_event("Create", secret_arn + "-missing"), None)
    assert runner == []


def test_unknown_request_type_is_refused(secret_arn: str, runner: list[str]) -> None:
    with pytest.raises(ValueError, match="Rollback"):
        app.handler(_event("Rollback", secret_arn), None)
    assert runner == []
