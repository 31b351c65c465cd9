"""The trust roots of the functions' TLS connections, so that ``sslmode=verify-full`` checks
who answers, not only that the line is encrypted.

- **RDS Proxy** presents an AWS Certificate Manager certificate (a wildcard for its endpoint
  domain) that chains to the **Amazon Root CAs 1–4** (Amazon Trust Services). They are taken
  from the pinned ``certifi`` bundle shipped in the layer — only those four, not the whole
  public web PKI — and written once per process to a file libpq can read.
- **The database itself** (the migrations' direct owner connection) presents a certificate
  of the **Amazon RDS CA** of its region (``rds-ca-rsa2048-g1`` by default), which no public
  bundle holds. ``make rds-ca`` fetches AWS's global bundle into this package
  (``rds-ca-bundle.pem``, git-ignored) before ``make layer``; without it the migration refuses
  to connect over TCP rather than connect unverified.
"""

import re
import tempfile
from functools import cache
from pathlib import Path

import certifi

from haki.errors import ConfigurationError

#: AWS's bundle of the RDS CAs, fetched by ``make rds-ca`` (see docs/deploy.md).
RDS_CA_BUNDLE = Path(__file__).with_name("rds-ca-bundle.pem")
#: certifi's bundle: a ``# Issuer: ...`` comment block, then the PEM, per root.
_ENTRY = re.compile(
    r"^# Issuer: CN=Amazon Root CA [1-4] O=Amazon\n(?:#.*\n)*"
    r"(-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+?-----END CERTIFICATE-----\n)",
    re.MULTILINE)


def amazon_root_cas_pem(bundle: str) -> str:
    """The Amazon Root CA 1–4 certificates of a certifi-format bundle."""
    return "".join(match.group(1) for match in _ENTRY.finditer(bundle))


@cache
def amazon_root_cas() -> Path:
    """A file holding the Amazon Root CAs (RDS Proxy's roots), written once per process."""
    pem = amazon_root_cas_pem(Path(certifi.where()).read_text(encoding="ascii"))
    if pem.count("BEGIN CERTIFICATE") != 4:
        raise ConfigurationError("the certifi bundle does not hold the four Amazon Root CAs")
    path = Path(tempfile.gettempdir()) / "haki-amazon-root-cas.pem"
    path.write_text(pem, encoding="ascii")
    return path


def rds_ca_bundle() -> Path:
    """The RDS CA bundle of the layer, or a configuration error naming the fix."""
    if not RDS_CA_BUNDLE.is_file():
        raise ConfigurationError(
            f"no RDS CA bundle at {RDS_CA_BUNDLE}: run `make rds-ca` before `make layer` "
            "(docs/deploy.md); the owner connection is never made unverified")
    return RDS_CA_BUNDLE
