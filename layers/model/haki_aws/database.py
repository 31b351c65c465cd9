"""The functions' database handle: RDS Proxy with IAM auth when deployed, else the core's URL.

Deployed (``HAKI_DB_IAM_AUTH=1``), each function logs in as its role through RDS Proxy with a
15-minute IAM auth token, minted on every (re)connect, over TLS. The ``HAKI_DB_*`` variables
are read here, at the AWS edge, into their own model: the core ``Settings`` knows nothing of
IAM. Otherwise the URL comes from :func:`haki.db.database_url` (``HAKI_DATABASE_URL``, or the
embedded server locally). Either way nothing connects before the first transaction.
"""

import os
from collections.abc import Callable, Mapping

from psycopg.conninfo import make_conninfo
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from haki.db import Database, Role, database_url
from haki.errors import ConfigurationError
from haki.settings import get_settings


class ProxyEndpoint(BaseModel):
    """``HAKI_DB_HOST`` / ``_PORT`` / ``_NAME`` / ``_USER``: where and as whom to log in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = Field(min_length=1)
    port: int = Field(default=5432, gt=0, lt=65536)
    name: str = Field(min_length=1)
    user: str = Field(min_length=1)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> "ProxyEndpoint":
        values = {
            field: environ[f"HAKI_DB_{field.upper()}"]
            for field in cls.model_fields
            if environ.get(f"HAKI_DB_{field.upper()}")
        }
        try:
            return cls(**values)
        except ValidationError as exc:
            names = ", ".join(f"HAKI_DB_{str(e['loc'][0]).upper()}" for e in exc.errors())
            raise ConfigurationError(f"HAKI_DB_IAM_AUTH=1 needs valid {names}") from exc


def iam_conninfo(endpoint: ProxyEndpoint) -> Callable[[], str]:
    """A conninfo callable that mints a fresh RDS IAM auth token per connection."""
    import boto3  # in the Lambda runtime; imported only when IAM auth is on

    client = boto3.client("rds")

    def conninfo() -> str:
        token = client.generate_db_auth_token(
            DBHostname=endpoint.host, Port=endpoint.port, DBUsername=endpoint.user
        )
        return make_conninfo(
            host=endpoint.host,
            port=endpoint.port,
            dbname=endpoint.name,
            user=endpoint.user,
            password=token,
            sslmode="require",
        )

    return conninfo


def runtime_database(role: Role, environ: Mapping[str, str] | None = None) -> Database:
    """The process's database handle for ``role`` (deployed: the role is ``HAKI_DB_USER``)."""
    env = os.environ if environ is None else environ
    if env.get("HAKI_DB_IAM_AUTH") == "1":
        return Database(iam_conninfo(ProxyEndpoint.from_env(env)))
    return Database(lambda: database_url(get_settings(), role))
