"""TLS trust roots: RDS Proxy's connections are verified against exactly the four Amazon Root
CAs (from the pinned certifi bundle), the owner's against the RDS CA bundle — or not at all."""

import ssl
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from psycopg.conninfo import conninfo_to_dict

from haki.errors import ConfigurationError
from haki.settings import Settings
from haki_aws import trust
from haki_aws.database import iam_conninfo


def test_the_proxy_roots_are_the_four_amazon_root_cas_and_load_in_openssl() -> None:
    path = trust.amazon_root_cas()
    context = ssl.create_default_context(cafile=str(path))
    roots = context.get_ca_certs()
    assert len(roots) == 4
    names = sorted(dict(part[0] for part in cert["subject"])["commonName"] for cert in roots)
    assert names == [f"Amazon Root CA {n}" for n in (1, 2, 3, 4)]
    assert all(dict(p[0] for p in cert["subject"])["organizationName"] == "Amazon"
               for cert in roots)


def test_only_amazon_entries_are_taken_from_a_bundle() -> None:
    bundle = ("# Issuer: CN=Other Root O=Other\n# Label: \"x\"\n-----BEGIN CERTIFICATE-----\n"
              "AAAA\n-----END CERTIFICATE-----\n\n# Issuer: CN=Amazon Root CA 3 O=Amazon\n"
              "# Serial: 1\n-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n")
    assert trust.amazon_root_cas_pem(bundle) == (
        "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n")


def test_proxy_connections_verify_the_certificate_and_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "eu-west-3")):
        monkeypatch.setenv(name, value)
    settings = Settings.from_env({"HAKI_DB_IAM_AUTH": "1", "HAKI_DB_HOST": "proxy.example",
                                  "HAKI_DB_USER": "haki_app"})
    params = conninfo_to_dict(iam_conninfo(settings)())
    assert params["sslmode"] == "verify-full"
    assert Path(params["sslrootcert"]) == trust.amazon_root_cas()
    assert parse_qs(urlsplit("https://" + params["password"]).query)["Action"] == ["connect"]


def test_without_the_rds_bundle_the_owner_connection_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(trust, "RDS_CA_BUNDLE", tmp_path / "absent.pem")
    with pytest.raises(ConfigurationError, match="make rds-ca"):
        trust.rds_ca_bundle()
