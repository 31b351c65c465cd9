"""``GET /v1/stats/overview`` (``handler``) and the scheduled rollup (``aggregate_handler``).

The overview runs as the runtime role, confined to the key's project; the aggregation, invoked
by an EventBridge schedule (not through API Gateway), runs as ``haki_stats`` across projects.
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from haki import stats
from haki.db import Role
from haki.models import SCOPE_MAX_CHARS
from haki_aws import gateway
from haki_aws.auth import key_scope
from haki_aws.database import runtime_database
from haki_aws.errors import register_error_handlers
from haki_aws.observability import api_entry, logger, tracer

app = APIGatewayRestResolver(enable_validation=True)
register_error_handlers(app)
db = runtime_database(Role.APP)
stats_db = runtime_database(Role.STATS)


@app.get("/v1/stats/overview", summary="Usage overview of a project (optionally one subject)")
@tracer.capture_method
def get_overview(
    project_id: Annotated[str, Query(min_length=1, max_length=SCOPE_MAX_CHARS)],
    subject_id: Annotated[
        str | None, Query(min_length=1, max_length=SCOPE_MAX_CHARS)
    ] = None,
) -> stats.StatsOverview:
    scope = key_scope(app, project_id)
    logger.append_keys(project_id=scope, subject_id=subject_id)
    return stats.overview(db, project_id=scope, subject_id=subject_id)


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve(app, db, event, context)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def aggregate_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Roll calls up to the watermark; the scheduled event's content is not used."""
    result = stats.aggregate(stats_db)
    summary = {
        "rolled_from": result.rolled_from.isoformat(),
        "rolled_until": result.rolled_until.isoformat(),
        "rollup_rows": result.rollup_rows,
        "calls": result.calls,
    }
    logger.info("stats aggregated", extra=summary)
    return summary
