"""The log salt read from Secrets Manager at cold start (``haki_aws.secrets``): the value the
stack generated completes the settings; a secret that cannot be read fails the cold start with
a configuration error that never holds the value. Secrets Manager is faked by moto."""

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from haki.errors import ConfigurationError
from haki.settings import Settings
from haki_aws import observability
from haki_aws.observability import subject_digest, subject_ref
from haki_aws.secrets import with_log_salt

SALT = "a-generated-salt-of-48-characters-0123456789abcd"


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[boto3.client]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        yield boto3.client("secretsmanager")


def test_the_secret_named_by_its_arn_becomes_the_salt(secrets: boto3.client) -> None:
    arn = secrets.create_secret(Name="haki/log-salt", SecretString=SALT)["ARN"]
    settings = with_log_salt(Settings.from_env({"HAKI_LOG_SALT_SECRET_ARN": arn}))
    assert settings.log_salt is not None and settings.log_salt.get_secret_value() == SALT
    assert SALT not in repr(settings)


def test_log_lines_are_keyed_with_the_secret(
    secrets: boto3.client, monkeypatch: pytest.MonkeyPatch
) -> None:
    arn = secrets.create_secret(Name="haki/log-salt", SecretString=SALT)["ARN"]
    monkeypatch.setattr(observability, "get_settings",
                        lambda: Settings(log_salt_secret_arn=arn))
    observability._log_salt.cache_clear()
    try:
        assert subject_ref("acme", "marie") == subject_digest(SALT.encode(), "acme", "marie")
    finally:
        observability._log_salt.cache_clear()


def test_a_given_salt_or_no_secret_reads_nothing() -> None:
    # No AWS here at all: a call to Secrets Manager would fail for want of a region.
    given = Settings(log_salt=SALT, log_salt_secret_arn="arn:aws:secretsmanager:x")
    assert with_log_salt(given) is given
    plain = Settings()
    assert with_log_salt(plain) is plain


def test_an_unreadable_or_short_secret_fails_the_cold_start_without_its_value(
    secrets: boto3.client,
) -> None:
    missing = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:haki/none-AbCdEf"
    with pytest.raises(ConfigurationError, match="SECRET_ARN: the secret could not be read"):
        with_log_salt(Settings(log_salt_secret_arn=missing))
    short = secrets.create_secret(Name="haki/short", SecretString="tiny")["ARN"]
    with pytest.raises(ConfigurationError, match="not a valid log salt") as raised:
        with_log_salt(Settings(log_salt_secret_arn=short))
    assert "tiny" not in str(raised.value)
