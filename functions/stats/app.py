"""``GET /v1/stats/overview`` and ``GET /v1/stats/series`` (``handler``) and the scheduled
rollup (``aggregate_handler``).

The overview runs as the runtime role, confined to the key's project; the aggregation, invoked
by an EventBridge schedule (not through API Gateway), runs as ``haki_stats`` across projects.
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from haki import stats
from haki.db import Role
from haki.settings import get_settings
from haki_aws import gateway
from haki_aws.auth import request_scope
from haki_aws.database import reader_database, runtime_database
from haki_aws.observability import (
    api_entry,
    logger,
    record_partitions,
    scheduled_entry,
    traced,
)
from haki_aws.params import OptionalScopeQuery

app = gateway.api_resolver()
db = runtime_database(Role.APP)
#: The overview reads the replica when the stack has one (haki:read_replica): its tail of
#: recent calls may then lag the writer by the replica's delay.
reader = reader_database(Role.APP)
#: The rollup may scan an hour of calls: bounded by its function's own timeout (300 s), not
#: by the API's statement timeout.
stats_db = runtime_database(Role.STATS, statement_timeout_ms=240_000)


@app.get("/v1/stats/overview", summary="Usage overview of a project (optionally one subject)")
@traced
def get_overview(
    project_id: OptionalScopeQuery = None,
    subject_id: OptionalScopeQuery = None,
) -> stats.StatsOverview:
    scope = request_scope(app, project_id, subject_id)
    return stats.overview(reader or db, project_id=scope, subject_id=subject_id)


@app.get("/v1/stats/series",
         summary="Calls, latency, injection rate and tokens served over time (from the rollups)")
@traced
def get_series(
    project_id: OptionalScopeQuery = None,
    subject_id: OptionalScopeQuery = None,
    days: Annotated[int, Query(ge=1, le=stats.MAX_SERIES_DAYS,
                               description="window, in days up to now")] = 7,
    granularity: Annotated[stats.Granularity, Query(description="bucket size")] = "hour",
) -> stats.StatsSeries:
    scope = request_scope(app, project_id, subject_id)
    return stats.series(reader or db, project_id=scope, subject_id=subject_id, days=days,
                        granularity=granularity)


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve(app, db, event, context)


@scheduled_entry
def aggregate_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Roll calls up to the watermark, then maintain the day partitions of calls and traces
    (ahead, and retention: ``HAKI_TRACE_RETENTION_DAYS``); the event's content is not used."""
    result = stats.aggregate(stats_db)
    partitions = stats.maintain_partitions(
        stats_db, retention_days=get_settings().trace_retention_days)
    summary = {
        "rolled_from": result.rolled_from.isoformat(),
        "rolled_until": result.rolled_until.isoformat(),
        "rollup_rows": result.rollup_rows,
        "calls": result.calls,
        "partitions_created": partitions.partitions_created,
        "partitions_dropped": partitions.partitions_dropped,
        "default_partition_rows": partitions.default_rows,
    }
    record_partitions(partitions.partitions_created, partitions.partitions_dropped,
                      partitions.default_rows)
    logger.info("stats aggregated", extra=summary)
    return summary
