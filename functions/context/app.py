"""``POST /v1/context``: the context packet for one subject, with its persisted trace; with
``render: true`` also the packet as the prompt-ready ``<haki_memory>`` block (``block``).

Module-level state is reused by a warm container: the resolver, one database handle (opened
on the first call) and the embedder (loaded on the first context call, not at import, so a
cold start that fails authentication never pays for the model).
"""

from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from haki.assembler import RetrievalConfig, assemble
from haki.assembler.render import render_packet
from haki.db import Role
from haki.embedding import Embedder, get_embedder
from haki.errors import BudgetExceeded
from haki.models import ContextRequest, ContextResponse
from haki.settings import get_settings
from haki_aws import gateway
from haki_aws.auth import key_scope
from haki_aws.database import runtime_database
from haki_aws.errors import responses
from haki_aws.observability import api_entry, log_scope, logger, record_assembly, traced

app = gateway.api_resolver()
settings = get_settings()
config = RetrievalConfig.from_settings(settings)
db = runtime_database(Role.APP)


def embedder() -> Embedder:
    """The process-wide embedder (cached by the core; the model loads on first use)."""
    return get_embedder(settings)


@app.post("/v1/context", summary="Assemble the context packet for a subject",
          responses=responses(HTTPStatus.OK, BudgetExceeded))
@traced
def post_context(request: ContextRequest) -> ContextResponse:
    project_id = key_scope(app, request.project_id)
    log_scope(project_id, request.subject_id)
    model = embedder()
    hits_before = model.cache_stats().hits
    assembly = assemble(request.model_copy(update={"project_id": project_id}),
                        lambda: model.embed_query(request.query, scope=project_id),
                        db=db, config=config)
    logger.append_keys(trace_id=str(assembly.response.trace_id))
    record_assembly(assembly, query_cache_hit=model.cache_stats().hits > hits_before)
    logger.info("context served", extra={
        "facts_served": assembly.facts_served,
        "episodes_served": assembly.episodes_served,
        "candidates": assembly.candidates,
        "timings_ms": assembly.timings_ms,
    })
    if request.render:
        return assembly.response.model_copy(
            update={"block": render_packet(assembly.response.packet)})
    return assembly.response


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve(app, db, event, context)
