"""How logs name a subject: HMAC-SHA256 of (project, subject) keyed with the deployment's
secret (``HAKI_LOG_SALT``). Without the secret a guessed subject id cannot be confirmed against
the logs; with it, lines of one subject correlate."""

import hashlib
import hmac
import io
import json

import pytest

from haki.errors import ConfigurationError
from haki.settings import Settings
from haki_aws import observability
from haki_aws.observability import log_scope, logger, subject_digest, subject_ref

SALT = b"a-deployment-secret-of-32-bytes!"
EMAIL = "marie.dupont@example.com"


def test_the_digest_is_the_keyed_hmac_and_depends_on_the_salt() -> None:
    digest = subject_digest(SALT, "acme", EMAIL)
    expected = hmac.new(SALT, b"acme\x00" + EMAIL.encode(), hashlib.sha256).hexdigest()[:16]
    assert digest == expected
    assert subject_digest(SALT, "acme", EMAIL) == digest  # stable: lines correlate
    assert subject_digest(b"another-deployment-secret-32byte", "acme", EMAIL) != digest
    assert subject_digest(SALT, "other-project", EMAIL) != digest
    # The unsalted digest a guesser could compute is not what the logs hold.
    assert hashlib.sha256(b"acme\x00" + EMAIL.encode()).hexdigest()[:16] != digest


def test_the_salt_is_a_secret_setting() -> None:
    settings = Settings.from_env({"HAKI_LOG_SALT": SALT.decode()})
    assert settings.log_salt is not None
    assert settings.log_salt.get_secret_value() == SALT.decode()
    assert SALT.decode() not in repr(settings)
    with pytest.raises(ConfigurationError, match="HAKI_LOG_SALT"):
        Settings.from_env({"HAKI_LOG_SALT": "short"})


def test_log_lines_carry_the_salted_digest_and_never_the_subject(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = io.StringIO()
    monkeypatch.setattr(logger.registered_handler, "stream", out)
    monkeypatch.setattr(observability, "get_settings",
                        lambda: Settings(log_salt=SALT.decode()))
    observability._log_salt.cache_clear()
    try:
        assert subject_ref("acme", EMAIL) == subject_digest(SALT, "acme", EMAIL)
        log_scope("acme", EMAIL)
        logger.info("context served")
        logger.remove_keys(["project_id", "subject"])
    finally:
        observability._log_salt.cache_clear()
    lines = [json.loads(line) for line in out.getvalue().splitlines() if line]
    served = [line for line in lines if line.get("message") == "context served"]
    assert [line["subject"] for line in served] == [subject_digest(SALT, "acme", EMAIL)]
    assert all(EMAIL not in json.dumps(line) for line in lines)
