"""The one owner of logging, tracing and metrics (Powertools).

Every log line is structured JSON with the API Gateway request id as correlation id; the
handlers append the tenant scope and the Haki trace id as soon as they are known. Metrics are
CloudWatch EMF, namespace ``Haki``, one blob per request dimensioned by endpoint and outcome
(``ok`` or the error code): ``Latency`` and, on failure, ``Errors`` for every request;
``CandidatesConsidered`` / ``FactsServed`` / ``EpisodesServed`` / ``EmptyPackets`` per context
call; ``EventsStored`` / ``EventsDeduplicated`` and ``Facts{Created,Reinforced,Superseded,
Conflicted}`` per write. Nothing secret and no tenant content leaves through them: never a
key, a body, a query or a packet; subjects are named by a digest keyed with the deployment's
secret (``HAKI_LOG_SALT``) unless ``HAKI_LOG_SUBJECT_IDS=plain``; X-Ray segments carry timings
and annotations only (Powertools would otherwise copy every traced method's return value —
the packet — and its exception into the trace).
"""

import hashlib
import hmac
import secrets
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from haki.assembler import Assembly
from haki.settings import get_settings
from haki_aws.secrets import with_log_salt

SERVICE = "haki"
NAMESPACE = "Haki"
#: The ``outcome`` dimension of a successful request (else the error code).
OK = "ok"

logger = Logger(service=SERVICE, level=get_settings().log_level)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)

F = TypeVar("F", bound=Callable[..., Any])


def traced(method: F) -> F:
    """An X-Ray subsegment around a route: its timing, never its response or its error."""
    return tracer.capture_method(capture_response=False, capture_error=False)(method)


def subject_digest(salt: bytes, project_id: str, subject_id: str) -> str:
    """HMAC-SHA256 of (project, subject) under ``salt``, its first 16 hex digits."""
    message = f"{project_id}\x00{subject_id}".encode()
    return hmac.new(salt, message, hashlib.sha256).hexdigest()[:16]


@cache
def _log_salt() -> bytes:
    """The deployment's salt (its secret, ``HAKI_LOG_SALT_SECRET_ARN``, or ``HAKI_LOG_SALT``),
    else a random secret of this process."""
    salt = with_log_salt(get_settings()).log_salt
    return salt.get_secret_value().encode() if salt is not None else secrets.token_bytes(32)


#: Read at cold start (the import of every handler), not on the time of a first request.
_log_salt()


def subject_ref(project_id: str, subject_id: str) -> str:
    """How logs name a subject (see ``HAKI_LOG_SUBJECT_IDS`` and ``HAKI_LOG_SALT``)."""
    if get_settings().log_subject_ids == "plain":
        return subject_id
    return subject_digest(_log_salt(), project_id, subject_id)


def log_scope(project_id: str, subject_id: str | None, **keys: str) -> None:
    """Put the request's scope (and ``keys``) on every later log line of this invocation."""
    subject = None if subject_id is None else subject_ref(project_id, subject_id)
    logger.append_keys(project_id=project_id, subject=subject, **keys)


def record_request(endpoint: str, outcome: str, milliseconds: float) -> None:
    """Every API request: its latency, dimensioned by endpoint and outcome (``ok`` or the
    error code), and one ``Errors`` count when it failed."""
    metrics.add_dimension("endpoint", endpoint)
    metrics.add_dimension("outcome", outcome)
    metrics.add_metric(name="Latency", unit=MetricUnit.Milliseconds, value=milliseconds)
    if outcome != OK:
        metrics.add_metric(name="Errors", unit=MetricUnit.Count, value=1)


def record_assembly(assembly: Assembly, *, query_cache_hit: bool) -> None:
    """One context call's outcome: what was considered, what was served, and whether the
    query's vector came from the container's cache (``QueryCacheHits``: its average is the
    hit rate)."""
    empty = assembly.facts_served == 0 and assembly.episodes_served == 0
    for name, value in (
        ("CandidatesConsidered", assembly.candidates),
        ("FactsServed", assembly.facts_served),
        ("EpisodesServed", assembly.episodes_served),
        ("EmptyPackets", int(empty)),
        ("QueryCacheHits", int(query_cache_hit)),
    ):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def record_writes(counts: dict[str, int]) -> None:
    """What a write request did, one count per outcome (e.g. ``EventsStored``,
    ``FactsReinforced``); zero counts are recorded too, so every series has a point."""
    for name, value in counts.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def record_partitions(created: int, dropped: int, default_rows: int) -> None:
    """The partition maintenance of a scheduled run (docs/scaling.md), flushed at once: a scheduled
    function has no ``log_metrics`` wrapper. ``DefaultPartitionRows`` > 0 means rows were
    written to a day that had no partition (alarm on it)."""
    metrics.add_metric(name="TracePartitionsCreated", unit=MetricUnit.Count, value=created)
    metrics.add_metric(name="TracePartitionsDropped", unit=MetricUnit.Count, value=dropped)
    metrics.add_metric(name="DefaultPartitionRows", unit=MetricUnit.Count, value=default_rows)
    metrics.flush_metrics()


def api_entry(handler: Callable[[dict[str, Any], Any], dict[str, Any]]
              ) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda entry point of an API function: structured logs correlated with the API
    Gateway request id (state cleared between invocations), an X-Ray segment, and the EMF
    metrics flushed at the end."""
    with_trace = tracer.capture_lambda_handler(
        metrics.log_metrics(handler), capture_response=False, capture_error=False)
    entry: Callable[[dict[str, Any], Any], dict[str, Any]] = logger.inject_lambda_context(
        correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)(with_trace)
    return entry


def scheduled_entry(handler: Callable[[dict[str, Any], Any], dict[str, Any]]
                    ) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The entry point of a scheduled function: logs and an X-Ray segment, as ``api_entry``
    but without API metrics."""
    with_trace = tracer.capture_lambda_handler(
        handler, capture_response=False, capture_error=False)
    return logger.inject_lambda_context(clear_state=True)(with_trace)
