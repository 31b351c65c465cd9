"""``POST /v1/events`` and ``POST /v1/facts``: the writes that embed (docs/spec.md §11).

The two routes share a function because they share its cost: every record is embedded here,
in batches, before one transaction writes the batch, so the function carries the model and is
sized for it (a full vCPU, ``haki_infra.config.DEFAULT_SIZING["ingest"]``), while the
memory routes that only run SQL (``functions/memory``) stay small. Batch bodies may reach
1 MiB (``haki_aws.routes``); the core bounds the tokens one batch embeds so the worst batch
stays well inside API Gateway's 29 s.

Module-level state is reused by a warm container: the resolver, one database handle (opened
on the first call) and the embedder (loaded on the first write, not at import).
"""

from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from haki.db import Role
from haki.embedding import Embedder, get_embedder
from haki.errors import (
    FactInOpenConflict,
    IdempotencyConflict,
    PayloadTooLarge,
    StaleSupersedes,
    StorageQuotaExceeded,
    UnknownReference,
)
from haki.memory.api import EventsRequest, EventsResponse, FactsRequest, FactsResponse
from haki.memory.events import ingest_events
from haki.memory.facts import write_facts
from haki.settings import get_settings
from haki_aws import gateway
from haki_aws.auth import key_scope
from haki_aws.database import runtime_database
from haki_aws.errors import responses
from haki_aws.observability import api_entry, log_scope, logger, record_writes, traced

app = gateway.api_resolver()
settings = get_settings()
db = runtime_database(Role.APP)

#: ``FactWritten.outcome`` → the metric counting it.
_FACT_METRICS = {"created": "FactsCreated", "reinforced": "FactsReinforced",
                 "superseded": "FactsSuperseded", "conflict": "FactsConflicted"}


def embedder() -> Embedder:
    """The process-wide embedder (cached by the core; the model loads on first use)."""
    return get_embedder(settings)


def _log_batch(project_id: str, subjects: set[str]) -> None:
    """The scope on every later log line: the subject when the batch has one."""
    log_scope(project_id, next(iter(subjects)) if len(subjects) == 1 else None)
    logger.append_keys(subjects=len(subjects))


@app.post("/v1/events",
          summary="Store a batch of events (episodes) or of conversation messages, idempotently",
          status_code=HTTPStatus.CREATED,
          responses=responses(HTTPStatus.CREATED, IdempotencyConflict, PayloadTooLarge,
                              StorageQuotaExceeded))
@traced
def post_events(request: EventsRequest) -> EventsResponse:
    project_id = key_scope(app, request.project_id)
    _log_batch(project_id, request.subjects())
    written = ingest_events(db, embedder(), project_id, request)
    replays = sum(e.deduplicated for e in written.events)
    record_writes({"EventsStored": len(written.events) - replays, "EventsDeduplicated": replays})
    return written


@app.post("/v1/facts", summary="Write a batch of facts through the rules of their key",
          status_code=HTTPStatus.CREATED,
          responses=responses(HTTPStatus.CREATED, PayloadTooLarge, StorageQuotaExceeded,
                              UnknownReference, StaleSupersedes, FactInOpenConflict))
@traced
def post_facts(request: FactsRequest) -> FactsResponse:
    project_id = key_scope(app, request.project_id)
    _log_batch(project_id, {f.subject_id for f in request.facts})
    written = write_facts(db, embedder(), project_id, request)
    record_writes({metric: sum(f.outcome == outcome for f in written.facts)
                   for outcome, metric in _FACT_METRICS.items()})
    return written


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve(app, db, event, context)
