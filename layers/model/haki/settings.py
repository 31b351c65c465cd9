"""Runtime configuration, read once from the environment into one validated model.

No other module reads ``os.environ``: code asks :func:`get_settings` (cached) or receives a
``Settings`` explicitly (tests and benchmarks build their own). The defaults are a deployed
function's; a local run (``haki_local.environment``) sets the variables of its own checkout
or working directory before anything reads them. Each field ``name`` is read
from ``HAKI_<NAME>``; :meth:`Settings.environment_variables` lists them, and the CDK app
checks the runtime variables it deploys against that list.
"""

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)

from haki.errors import ConfigurationError
from haki.roles import DATABASE_NAME

#: Where the layer puts the model files (``/opt`` is the layer mount point in Lambda).
LAYER_MODEL_DIR = Path("/opt/haki/models")


class Settings(BaseModel):
    """Every knob of the service, with its environment variable and default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: ``HAKI_DATABASE_URL``: a libpq URL, the role's own (a deployment sets it or
    #: ``db_iam_auth`` for each function; a local run, the embedded PostgreSQL's).
    database_url: str | None = None
    #: ``HAKI_DATA_DIR``: a local run's state (the embedded database, the dev key); nothing
    #: deployed reads it.
    data_dir: Path = Path(".haki")
    #: ``HAKI_EMBED_PROVIDER``: which embedder builds query and passage vectors.
    embed_provider: str = "e5-small-multilingual"
    #: ``HAKI_MODEL_DIR``: folder holding one sub-folder per built provider (default: the
    #: layer's).
    model_dir: Path = LAYER_MODEL_DIR
    #: ``HAKI_MIGRATIONS_DIR``: the folder of the SQL migrations (default: the copy packaged
    #: with the code, in the layer or the wheel: ``haki.db.migrate``).
    migrations_dir: Path | None = None
    #: ``HAKI_EMBED_THREADS``: onnxruntime intra-op threads (a Lambda ≤1769 MB has one vCPU).
    embed_threads: int = Field(default=1, ge=1, le=64)
    #: ``HAKI_EMBED_QUERY_CACHE_SIZE``: query vectors a process keeps per project (an LRU of
    #: each project's own, so one project never evicts another's entries; agents repeat
    #: questions); 0 turns the cache off. ~1.8 KiB an entry.
    embed_query_cache_size: int = Field(default=1024, ge=0, le=65_536)
    #: ``HAKI_EMBED_QUERY_CACHE_PROJECTS``: how many projects' caches a process holds at once
    #: (the least recently asking one is dropped whole for a new one).
    embed_query_cache_projects: int = Field(default=8, ge=1, le=1024)
    #: ``HAKI_RECALL_MAX_DISTANCE``: opt-in recall floor on cosine distance; 0 disables it.
    recall_max_distance: float = Field(default=0.0, ge=0.0, le=2.0)
    #: ``HAKI_VOLATILITY_HORIZON_*_DAYS``: after this many days without reinforcement a fact of
    #: that volatility is flagged (slow) or dropped (volatile, ephemeral).
    volatility_horizon_slow_days: float = Field(default=365.0, gt=0)
    volatility_horizon_volatile_days: float = Field(default=60.0, gt=0)
    volatility_horizon_ephemeral_days: float = Field(default=7.0, gt=0)
    #: ``HAKI_STATEMENT_TIMEOUT_MS``: the longest any statement of an API call may run; past
    #: it the call fails fast with 503 ``service_unavailable`` instead of holding a
    #: connection until the function times out. 0 keeps the server's setting.
    statement_timeout_ms: int = Field(default=5000, ge=0, le=600_000)
    #: ``HAKI_AUTH_CACHE_SECONDS``: a warm process remembers a key it authenticated for this
    #: long and skips the lookup's round trip (haki.keys.IdentityCache: revocation still
    #: takes effect on the next transaction, which checks the key itself). 0 turns it off.
    auth_cache_seconds: float = Field(default=60.0, ge=0.0, le=3600.0)
    #: ``HAKI_TRACE_RETENTION_DAYS``: context calls and their traces are kept this many days
    #: (whole day partitions dropped by the scheduled job, haki/stats/partitions.py); inspect
    #: of an older trace is 404 ``trace_not_found``; the stats rollups are kept.
    trace_retention_days: int = Field(default=30, ge=1, le=36_500)
    #: ``HAKI_TRACE_DURABLE_COMMIT``: on, a context call answers once its trace (the call row
    #: and its decisions, the only rows it writes) is flushed to durable storage — on RDS an
    #: EBS write, on Multi-AZ or Aurora an acknowledgement from another zone, each time. Off
    #: (default): the commit returns at once and the server's WAL writer flushes it within
    #: 3 × ``wal_writer_delay`` (600 ms at the default 200 ms); a database crash in that window
    #: loses those calls' traces whole (inspect answers 404), never a memory write — events,
    #: facts, conflicts and forget always commit durably.
    trace_durable_commit: bool = False
    #: ``HAKI_SCOPE_INDEX_MIN_ROWS`` / ``_MAX_SHARE``, ``HAKI_SCOPE_INDEXES_MAX``: a subject
    #: holding at least this many facts (or events), and at most this share of the table, gets
    #: an HNSW graph of its own (``haki.db.scope_indexes``; built and dropped by the scheduled
    #: job, or ``haki scope-indexes``), the largest first, at most this many per table; 0 graphs
    #: drops them all.
    scope_index_min_rows: int = Field(default=10_000, ge=2)
    scope_index_max_share: float = Field(default=0.5, gt=0.0, le=1.0)
    scope_indexes_max: int = Field(default=32, ge=0, le=1000)
    #: ``HAKI_MAX_FACTS_PER_PROJECT`` / ``HAKI_MAX_EVENTS_PER_PROJECT``: the storage quota of
    #: each project, in rows of any status; a write past it is refused with 413
    #: ``storage_quota_exceeded`` and stores nothing (``haki.memory.quota``).
    max_facts_per_project: int = Field(default=1_000_000, ge=1)
    max_events_per_project: int = Field(default=10_000_000, ge=1)
    #: ``HAKI_LOG_LEVEL``.
    log_level: str = "INFO"
    #: ``HAKI_LOG_SUBJECT_IDS``: how log lines name a subject. ``hashed`` (default): a stable
    #: 16-hex-digit keyed digest of (project, subject) (``log_salt``), enough to correlate
    #: lines, not the id a tenant chose (which may be an e-mail address); ``plain``: the id.
    log_subject_ids: Literal["hashed", "plain"] = "hashed"
    #: ``HAKI_LOG_SALT``: the per-deployment secret the subject digest of the logs is keyed
    #: with (HMAC-SHA256), so a guessed subject id cannot be confirmed against the logs without
    #: it. The stack generates one in Secrets Manager (``log_salt_secret_arn``, docs/security.md,
    #: "Logs"). Unset: a random one per process
    #: (digests then correlate within one process only).
    log_salt: SecretStr | None = Field(default=None, min_length=16)
    #: ``HAKI_LOG_SALT_SECRET_ARN``: deployed, the ARN of the Secrets Manager secret holding
    #: ``log_salt`` (the stack sets it; the value never sits in the environment). The AWS edge
    #: reads the secret at cold start (``haki_aws.secrets``) into ``log_salt``.
    log_salt_secret_arn: str | None = Field(default=None, min_length=1)

    # Deployed functions reach the database through RDS Proxy with IAM auth; the CDK stack
    # sets these and the AWS edge (``haki_aws.database``) reads them from here.
    #: ``HAKI_DB_IAM_AUTH``: log in with a short-lived IAM token instead of ``database_url``.
    db_iam_auth: bool = False
    #: ``HAKI_DB_HOST`` / ``_PORT`` / ``_NAME`` / ``_USER``: where and as whom to log in.
    db_host: str | None = Field(default=None, min_length=1)
    db_port: int = Field(default=5432, gt=0, lt=65536)
    db_name: str = Field(default=DATABASE_NAME, min_length=1)
    db_user: str | None = Field(default=None, min_length=1)
    #: ``HAKI_DB_READER_HOST``: the read-only proxy endpoint of a read replica (set by the CDK
    #: stack only with ``haki:read_replica``, only on the inspect and stats functions). Those
    #: read through it, falling back to the writer for a trace not yet replicated; the context
    #: and write functions never get it.
    db_reader_host: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _iam_endpoint_complete(self) -> "Settings":
        if self.db_iam_auth and not (self.db_host and self.db_user):
            raise ValueError("HAKI_DB_IAM_AUTH=1 needs HAKI_DB_HOST and HAKI_DB_USER")
        return self

    @classmethod
    def environment_variables(cls) -> frozenset[str]:
        """The names of every variable :meth:`from_env` reads."""
        return frozenset(f"HAKI_{name.upper()}" for name in cls.model_fields)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        """Build settings from ``HAKI_*`` variables; unknown ``HAKI_*`` names are ignored."""
        env = os.environ if environ is None else environ
        values: dict[str, str] = {}
        for name in cls.model_fields:
            raw = env.get(f"HAKI_{name.upper()}")
            if raw is not None and raw != "":
                values[name] = raw
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                (f"HAKI_{str(err['loc'][0]).upper()}: " if err["loc"] else "") + err["msg"]
                for err in exc.errors()
            )
            raise ConfigurationError(f"invalid configuration: {problems}") from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment on first use."""
    return Settings.from_env()
