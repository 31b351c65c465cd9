"""The deployed database handle: IAM auth through RDS Proxy over TLS, a fresh token per
connection; without IAM the core's URL. (Token signing is local: no AWS call is made.)"""

from urllib.parse import parse_qs, urlsplit

import pytest
from psycopg.conninfo import conninfo_to_dict

from haki.db import Role
from haki.errors import ConfigurationError
from haki.settings import Settings
from haki_aws.database import iam_conninfo, runtime_database

ENV = {"HAKI_DB_IAM_AUTH": "1", "HAKI_DB_HOST": "proxy.example", "HAKI_DB_PORT": "5432",
       "HAKI_DB_NAME": "haki", "HAKI_DB_USER": "haki_app"}


@pytest.fixture
def fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")


def test_iam_conninfo_mints_a_signed_token_and_requires_tls(fake_credentials: None) -> None:
    conninfo = iam_conninfo(Settings.from_env(ENV))
    params = conninfo_to_dict(conninfo())
    assert params["host"] == "proxy.example" and params["user"] == "haki_app"
    assert params["dbname"] == "haki" and params["sslmode"] == "verify-full"
    token = urlsplit("https://" + params["password"])
    assert token.hostname == "proxy.example"
    assert parse_qs(token.query)["Action"] == ["connect"]
    assert parse_qs(token.query)["DBUser"] == ["haki_app"]


def test_iam_auth_without_host_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="HAKI_DB_HOST"):
        Settings.from_env({"HAKI_DB_IAM_AUTH": "1", "HAKI_DB_NAME": "haki", "HAKI_DB_USER": "u"})


def test_without_iam_auth_the_handle_uses_the_core_url() -> None:
    """No IAM flag: the configured URL is used as given, and nothing connects yet."""
    url = "postgresql://haki_app@db.example/haki"
    db = runtime_database(Role.APP, Settings(database_url=url))
    assert db.conninfo() == url


def test_without_a_url_the_first_connection_is_a_configuration_error() -> None:
    """Built at import without a URL (nothing connects yet); the first use says what is
    missing instead of falling back to some other database."""
    db = runtime_database(Role.APP, Settings())
    with pytest.raises(ConfigurationError, match="HAKI_DATABASE_URL is not set"):
        db.conninfo()


def test_the_reader_handle_exists_only_with_a_reader_endpoint(fake_credentials: None) -> None:
    from haki_aws.database import reader_database

    assert reader_database(Role.APP, Settings.from_env(ENV)) is None
    assert reader_database(Role.APP, Settings.from_env(
        {"HAKI_DB_READER_HOST": "reader.example"})) is None  # no IAM: local, the writer
    reader = reader_database(Role.APP, Settings.from_env(
        {**ENV, "HAKI_DB_READER_HOST": "reader.example"}))
    assert reader is not None
    conninfo = iam_conninfo(Settings.from_env(ENV), host="reader.example")
    assert conninfo_to_dict(conninfo())["host"] == "reader.example"
