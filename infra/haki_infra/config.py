"""Deployment settings, read once from CDK context (``cdk.json`` or ``-c key=value``).

Every key is prefixed ``haki:``. Values given with ``-c`` arrive as strings, so each field is
parsed from either a string or its JSON type. Unknown ``haki:`` keys are rejected: a typo must
not silently deploy the default.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from aws_cdk import aws_logs as logs
from constructs import Node

from haki.settings import Settings

#: Root of the checkout (``infra/haki_infra/config.py`` → two levels up).
PROJECT_ROOT = Path(__file__).resolve().parents[2]
PREFIX = "haki:"
#: What CloudFormation accepts as a stack name.
STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,127}")


class Engine(StrEnum):
    RDS = "rds"
    AURORA = "aurora"


class Arch(StrEnum):
    """Lambda architectures; the value is the folder name ``make layer ARCH=...`` writes."""

    ARM64 = "arm64"
    X86_64 = "x86_64"


@dataclass(frozen=True)
class FunctionSizing:
    memory_mb: int
    timeout_s: int
    #: ``None`` leaves the function on the unreserved account pool.
    reserved_concurrency: int | None


#: Starting sizes (see docs/deploy.md, "Sizing"). ``context`` gets 1769 MB because that is the
#: size at which Lambda grants one full vCPU, and the query embedding is single-threaded,
#: CPU-bound work; ``ingest`` too, for the same reason at a larger scale: it embeds whole
#: batches (up to ``haki.memory.api.MAX_EMBED_TOKENS`` tokens, ~10-15 s on one core at
#: worst), so its timeout is API Gateway's own 29 s: past it the caller has had its 504 and a
#: write that commits later would only surprise a retry. The other functions do one or two SQL
#: round trips and need no more than the memory that imports the core (``memory``'s erasure
#: of a large subject is one statement). Reserved concurrency caps what the proxy can be
#: asked for: the sum stays well under the proxy's connection budget for the default instance.
DEFAULT_SIZING: dict[str, FunctionSizing] = {
    "context": FunctionSizing(memory_mb=1769, timeout_s=15, reserved_concurrency=40),
    "inspect": FunctionSizing(memory_mb=512, timeout_s=10, reserved_concurrency=10),
    "stats": FunctionSizing(memory_mb=512, timeout_s=10, reserved_concurrency=10),
    "ingest": FunctionSizing(memory_mb=1769, timeout_s=29, reserved_concurrency=20),
    "memory": FunctionSizing(memory_mb=512, timeout_s=15, reserved_concurrency=10),
    # One key lookup per key per cache TTL (API Gateway caches its answers).
    "authorizer": FunctionSizing(memory_mb=512, timeout_s=10, reserved_concurrency=6),
    # The health checks: no key, one `SELECT 1`; two at a time bound what probes (or a flood
    # of them) can take from the proxy.
    "health": FunctionSizing(memory_mb=256, timeout_s=10, reserved_concurrency=2),
    # One aggregation at a time: a run must not overlap the previous one.
    "aggregate": FunctionSizing(memory_mb=512, timeout_s=300, reserved_concurrency=1),
    "migrate": FunctionSizing(memory_mb=512, timeout_s=600, reserved_concurrency=1),
    # The console's static files, public (no key): a few milliseconds each, no database. Its
    # reservation caps what a flood of page loads can take of the account's concurrency.
    "console": FunctionSizing(memory_mb=128, timeout_s=5, reserved_concurrency=10),
}
#: The one function that never reaches the database (its reservation is not the proxy's).
NO_DATABASE = frozenset({"console"})


@dataclass(frozen=True)
class HakiConfig:
    """What a deployment may choose; the defaults are the production deployment."""

    #: The CloudFormation stack's name: two deployments (staging, production) with different
    #: names live side by side in one account and region.
    stack_name: str = "Haki"
    #: ``rds`` = RDS PostgreSQL 16 instance; ``aurora`` = Aurora PostgreSQL Serverless v2.
    engine: Engine = Engine.RDS
    #: Dev mode: no deletion protection, the database is destroyed with the stack, one AZ.
    dev: bool = False
    #: Architecture of every function. arm64 (Graviton) costs ~20% less per GB-second, and
    #: every native wheel of the layer (onnxruntime with its NEON int8 kernels, tokenizers,
    #: psycopg, pydantic-core) ships for aarch64, so nothing ties the service to x86_64.
    architecture: Arch = Arch.ARM64
    #: Folder holding ``python/`` for that architecture (``make layer ARCH=...`` output).
    #: Relative paths are relative to the checkout root.
    layer_dir: Path | None = None
    #: Per-function overrides, e.g. ``{"context": {"memory_mb": 2048}}``.
    sizing: dict[str, FunctionSizing] = field(default_factory=lambda: dict(DEFAULT_SIZING))
    instance_type: str = "t4g.small"
    aurora_min_acu: float = 0.5
    aurora_max_acu: float = 4.0
    #: Stage-wide throttle (all clients together).
    throttle_rate: float = 100.0
    throttle_burst: int = 200
    #: Per-project throttle and daily quota (the default usage plan, metering the usage key
    #: the authorizer names for the caller's project).
    key_throttle_rate: float = 20.0
    key_throttle_burst: int = 40
    key_quota_per_day: int = 200_000
    #: How long API Gateway caches the authorizer's answer for one Authorization value
    #: (0..3600; 0: every call runs the authorizer). A revoked key is still refused by the
    #: function within it, but the edge lets it through and meters it this long: 30 s keeps
    #: that window short for at most one authorizer run per key per 30 s
    #: (docs/decisions/2026-12-05-authorizer-cache-30-seconds.md).
    authorizer_cache_seconds: int = 30
    #: An AWS WAFv2 web ACL on the stage (from ~$6/month), with the AWS common rule set and a
    #: per-IP rate-based rule of ``waf_rate_limit`` requests per 5 minutes; ``false`` turns it
    #: off (a throwaway environment, or a WAF managed outside the stack).
    waf: bool = True
    waf_rate_limit: int = 2000
    #: Optional custom domain (with the ARN of its ACM certificate, same region), TLS 1.2+.
    domain_name: str | None = None
    certificate_arn: str | None = None
    aggregation_rate_minutes: int = 5
    #: How often the migration function runs its scope-index task (big subjects' own HNSW and
    #: GIN indexes, ``haki.db.scope_indexes``); 0: never (``haki scope-indexes`` by hand).
    scope_index_rate_minutes: int = 60
    #: A ``RetentionDays`` name, e.g. ``ONE_MONTH``, ``THREE_MONTHS``.
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    #: p99 duration of the context function above which the latency alarm fires.
    context_p99_alarm_ms: int = 1500
    alarm_email: str | None = None
    #: Adds an SSM-managed host for the admin CLI (see ``admin.py``); off by default.
    bastion: bool = False
    #: Extra ``HAKI_*`` runtime variables for every function (recall floor, horizons, ...).
    runtime_env: dict[str, str] = field(default_factory=dict)
    #: Opt-in: a read-only RDS Proxy endpoint over the Aurora reader (a reader is
    #: added in dev mode too), given to the inspect and stats functions only
    #: (``HAKI_DB_READER_HOST``). Aurora only: RDS Proxy has no read-only endpoint over an RDS
    #: instance's read replicas.
    read_replica: bool = False

    def __post_init__(self) -> None:
        if not STACK_NAME.fullmatch(self.stack_name):
            raise ValueError(f"{PREFIX}stack_name {self.stack_name!r}: a letter, then letters, "
                             "digits and hyphens, at most 128 characters (CloudFormation's rule)")
        unknown = set(self.sizing) - set(DEFAULT_SIZING)
        if unknown:
            raise ValueError(f"{PREFIX}sizing: unknown functions {sorted(unknown)}")
        if self.scope_index_rate_minutes < 0:
            raise ValueError(f"{PREFIX}scope_index_rate_minutes must be >= 0 (0: never)")
        if self.read_replica and self.engine is not Engine.AURORA:
            raise ValueError(f"{PREFIX}read_replica needs {PREFIX}engine=aurora (RDS Proxy "
                             "read-only endpoints exist for Aurora clusters only)")
        if not 0 <= self.authorizer_cache_seconds <= 3600:
            raise ValueError(f"{PREFIX}authorizer_cache_seconds must be within 0..3600")
        if self.waf_rate_limit < 10:
            raise ValueError(f"{PREFIX}waf_rate_limit must be >= 10 (AWS WAF's minimum)")
        if bool(self.domain_name) != bool(self.certificate_arn):
            raise ValueError(f"{PREFIX}domain_name and {PREFIX}certificate_arn go together")
        bad_env = [k for k in self.runtime_env if k not in RUNTIME_ENV_NAMES]
        if bad_env:
            raise ValueError(f"{PREFIX}runtime_env: not runtime settings: {bad_env}")

    @property
    def resolved_layer_dir(self) -> Path:
        path = self.layer_dir or Path("build") / "layer" / self.architecture.value
        return path if path.is_absolute() else PROJECT_ROOT / path

    @classmethod
    def from_context(cls, node: Node) -> "HakiConfig":
        """Read every ``haki:*`` context value of the app."""
        raw = {
            key.removeprefix(PREFIX): value
            for key, value in node.get_all_context().items()
            if key.startswith(PREFIX) and value is not None
        }
        return cls.from_mapping(raw)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> "HakiConfig":
        unknown = set(raw) - _FIELD_NAMES
        if unknown:
            raise ValueError(f"unknown context keys: {sorted(PREFIX + k for k in unknown)}")
        values: dict[str, Any] = {name: _PARSERS[name](value) for name, value in raw.items()}
        return cls(**values)


#: The ``HAKI_DB_*`` variables: the stack itself sets them on every function (the proxy).
STACK_ENV_NAMES = frozenset(
    name for name in Settings.environment_variables() if name.startswith("HAKI_DB_"))
#: The variables a deployment may add: what ``haki.settings.Settings`` reads, minus what the
#: stack sets (the proxy's, the generated log salt's secret) and the two that only make sense on a
#: developer's machine. Anything else in ``runtime_env`` is a typo.
RUNTIME_ENV_NAMES = Settings.environment_variables() - STACK_ENV_NAMES - {
    "HAKI_LOG_SALT", "HAKI_LOG_SALT_SECRET_ARN", "HAKI_DATABASE_URL", "HAKI_DATA_DIR"}


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _sizing(value: Any) -> dict[str, FunctionSizing]:
    merged = dict(DEFAULT_SIZING)
    for name, override in _json(value).items():
        base = merged.get(name)
        if base is None:
            raise ValueError(f"{PREFIX}sizing: unknown function {name!r}")
        try:
            merged[name] = replace(base, **override)
        except TypeError as exc:
            raise ValueError(f"{PREFIX}sizing.{name}: {exc}") from exc
    return merged


def _optional_str(value: Any) -> str | None:
    return str(value) or None


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _json(value).items()}


_PARSERS: dict[str, Any] = {
    "stack_name": str,
    "engine": Engine,
    "dev": _bool,
    "architecture": Arch,
    "layer_dir": Path,
    "sizing": _sizing,
    "instance_type": str,
    "aurora_min_acu": float,
    "aurora_max_acu": float,
    "throttle_rate": float,
    "throttle_burst": int,
    "key_throttle_rate": float,
    "key_throttle_burst": int,
    "key_quota_per_day": int,
    "authorizer_cache_seconds": int,
    "waf": _bool,
    "waf_rate_limit": int,
    "domain_name": _optional_str,
    "certificate_arn": _optional_str,
    "aggregation_rate_minutes": int,
    "scope_index_rate_minutes": int,
    "log_retention": lambda value: logs.RetentionDays[str(value)],
    "context_p99_alarm_ms": int,
    "alarm_email": _optional_str,
    "bastion": _bool,
    "runtime_env": _str_map,
    "read_replica": _bool,
}
_FIELD_NAMES = frozenset(f.name for f in fields(HakiConfig))
