"""The functions' database handle: RDS Proxy with IAM auth when deployed, else the core's URL.

Deployed (``HAKI_DB_IAM_AUTH=1``), each function logs in as its role through RDS Proxy with a
15-minute IAM auth token, minted on every (re)connect, over TLS verified against the Amazon
Root CAs (``sslmode=verify-full``, see ``haki_aws.trust``). Where and as whom come from
the validated :class:`haki.settings.Settings` (``HAKI_DB_HOST`` / ``_PORT`` / ``_NAME`` /
``_USER``), read once like every other setting. Otherwise the process connects to
``HAKI_DATABASE_URL``, its role's own URL (a local run sets the embedded server's). Either way
nothing connects before the first transaction.
"""

from collections.abc import Callable

from psycopg.conninfo import make_conninfo

from haki.db import Database, Role
from haki.errors import ConfigurationError
from haki.settings import Settings, get_settings
from haki_aws.trust import amazon_root_cas


def iam_conninfo(settings: Settings, *, host: str | None = None) -> Callable[[], str]:
    """A conninfo callable that mints a fresh RDS IAM auth token per connection (to
    ``HAKI_DB_HOST``, or ``host``: the reader endpoint)."""
    import boto3  # in the Lambda runtime; imported only when IAM auth is on

    client = boto3.client("rds")
    host, port, user = host or settings.db_host, settings.db_port, settings.db_user
    roots = amazon_root_cas()

    def conninfo() -> str:
        token = client.generate_db_auth_token(DBHostname=host, Port=port, DBUsername=user)
        return make_conninfo(
            host=host,
            port=port,
            dbname=settings.db_name,
            user=user,
            password=token,
            sslmode="verify-full",
            sslrootcert=str(roots),
        )

    return conninfo


def configured_url(settings: Settings) -> str:
    """``HAKI_DATABASE_URL``, which a process that does not log in with IAM must have."""
    if not settings.database_url:
        raise ConfigurationError("HAKI_DATABASE_URL is not set")
    return settings.database_url


def runtime_database(
    role: Role, settings: Settings | None = None, *, statement_timeout_ms: int | None = None
) -> Database:
    """The process's database handle for ``role``: the role the deployment logs the function
    in as (``HAKI_DB_USER`` with IAM, else ``HAKI_DATABASE_URL``'s user).
    Statements are bounded by ``HAKI_STATEMENT_TIMEOUT_MS`` unless the caller (a scheduled
    job with its own time budget) gives its own bound."""
    settings = settings or get_settings()
    timeout = settings.statement_timeout_ms if statement_timeout_ms is None else (
        statement_timeout_ms)
    if settings.db_iam_auth:
        return Database(iam_conninfo(settings), statement_timeout_ms=timeout)
    return Database(lambda: configured_url(settings), statement_timeout_ms=timeout)


def reader_database(
    role: Role, settings: Settings | None = None, *, statement_timeout_ms: int | None = None
) -> Database | None:
    """The read replica's handle (``HAKI_DB_READER_HOST``, the proxy's read-only endpoint) for
    the inspect and stats functions, or None when no reader is configured (read the writer).
    A replica lags: a caller that finds nothing there must ask the writer before answering
    "not found" (``haki.assembler.trace.load_trace``)."""
    settings = settings or get_settings()
    if not (settings.db_iam_auth and settings.db_reader_host):
        return None
    timeout = settings.statement_timeout_ms if statement_timeout_ms is None else (
        statement_timeout_ms)
    return Database(iam_conninfo(settings, host=settings.db_reader_host),
                    statement_timeout_ms=timeout)
