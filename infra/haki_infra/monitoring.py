"""Alarms (to an encrypted SNS topic, optional e-mail subscription) and one dashboard.

Each alarm has its runbook entry in docs/operations.md (what it means, first checks, fixes),
under a heading named by the alarm's id."""

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from haki_infra.api import Api
from haki_infra.config import HakiConfig
from haki_infra.database import Database
from haki_infra.proxy import Proxy

_PERIOD = Duration.minutes(5)
#: Connections to PostgreSQL that call for a look: the proxy multiplexes a few hundred
#: function containers onto far fewer; db.t4g.small allows about 200 in total.
DB_CONNECTIONS_ALARM = 150
#: Proxy borrow latency (microseconds) above which requests queue for a database connection.
BORROW_LATENCY_ALARM_US = 100_000
#: Free storage (bytes) below which writes are about to fail: storage autoscaling grows the
#: volume once less than 10% is free (2 GiB of the initial 20), so 15 minutes below this means
#: it has reached its maximum or cannot grow.
FREE_STORAGE_ALARM_BYTES = 2 * 1024**3
#: Freeable memory (bytes) below which PostgreSQL is about to swap.
FREEABLE_MEMORY_ALARM_BYTES = 128 * 1024**2
#: The runtime's own metrics (``haki_aws.observability``: EMF, one ``service`` dimension).
METRICS_NAMESPACE = "Haki"
METRICS_SERVICE = "haki"
#: Scheduled aggregation intervals without a single run before the "stopped" alarm fires.
MISSED_AGGREGATIONS = 3


@dataclass(frozen=True)
class _AlarmSpec:
    id: str
    description: str
    metric: cloudwatch.IMetric
    threshold: float
    #: Consecutive 5-minute periods over the threshold before the alarm fires.
    periods: int = 1
    #: Fires below the threshold rather than above it.
    below: bool = False
    #: No data counts as breaching (a metric that stops means the thing stopped).
    missing_breaches: bool = False


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HakiConfig,
        api: Api,
        functions: Mapping[str, lambda_.IFunction],
        database: Database,
        proxy: Proxy,
    ) -> None:
        super().__init__(scope, construct_id)
        key = kms.Key(self, "TopicKey", enable_key_rotation=True, description="haki alarms")
        # CloudWatch publishes to the encrypted topic, so it must be able to use the key.
        key.grant(
            iam.ServicePrincipal("cloudwatch.amazonaws.com"),
            "kms:Decrypt",
            "kms:GenerateDataKey*",
        )
        self.topic = sns.Topic(self, "Alarms", master_key=key, enforce_ssl=True)
        if config.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))

        context = functions["context"]
        specs = [
            _AlarmSpec(
                "Api5xxRate",
                "More than 5% of API requests answered 5xx",
                api.rest_api.metric_server_error(statistic="Average", period=_PERIOD),
                0.05,
                periods=2,
            ),
            _AlarmSpec(
                "ContextP99Latency",
                f"p99 duration of the context function above {config.context_p99_alarm_ms} ms",
                context.metric_duration(statistic="p99", period=_PERIOD),
                config.context_p99_alarm_ms,
                periods=3,
            ),
            _AlarmSpec(
                "DatabaseCpu",
                "Database CPU above 80%",
                database.metric_cpu(),
                80,
                periods=3,
            ),
            _AlarmSpec(
                "DatabaseConnections",
                f"More than {DB_CONNECTIONS_ALARM} connections to PostgreSQL",
                database.metric_connections(),
                DB_CONNECTIONS_ALARM,
                periods=2,
            ),
            _AlarmSpec(
                "ProxyBorrowLatency",
                "Requests wait more than 100 ms for a database connection at the proxy",
                proxy.metric("DatabaseConnectionsBorrowLatency", "p99"),
                BORROW_LATENCY_ALARM_US,
                periods=2,
            ),
            _AlarmSpec(
                "ProxyFailedAuth",
                "IAM logins to the proxy fail (role grants or rds_iam membership broken)",
                proxy.metric("ClientConnectionsSetupFailedAuth", "Sum"),
                0,
            ),
            _AlarmSpec(
                "DatabaseFreeStorage",
                f"Less than {FREE_STORAGE_ALARM_BYTES // 1024**3} GiB of database storage left",
                database.metric_free_storage(),
                FREE_STORAGE_ALARM_BYTES,
                periods=3,
                below=True,
            ),
            _AlarmSpec(
                "DatabaseFreeableMemory",
                f"Less than {FREEABLE_MEMORY_ALARM_BYTES // 1024**2} MiB of database memory "
                "free (swapping is near)",
                database.metric_freeable_memory(),
                FREEABLE_MEMORY_ALARM_BYTES,
                periods=3,
                below=True,
            ),
            _AlarmSpec(
                "DefaultPartitionRows",
                "Calls or traces were written to the DEFAULT partition: a day had no partition "
                "(the scheduled rollup that makes them stopped for days)",
                cloudwatch.Metric(
                    namespace=METRICS_NAMESPACE, metric_name="DefaultPartitionRows",
                    dimensions_map={"service": METRICS_SERVICE}, statistic="Maximum",
                    period=_PERIOD),
                0,
            ),
            _AlarmSpec(
                "AggregationStopped",
                f"The stats aggregation did not run in {MISSED_AGGREGATIONS} scheduled "
                "intervals (its schedule disabled, or its function not invoked)",
                functions["aggregate"].metric_invocations(
                    statistic="Sum", period=Duration.minutes(
                        min(MISSED_AGGREGATIONS * config.aggregation_rate_minutes, 1440))),
                1,
                below=True,
                missing_breaches=True,
            ),
        ]
        for name, function in functions.items():
            title = name.capitalize()
            specs.append(
                _AlarmSpec(
                    f"{title}Errors",
                    f"The {name} function raised unhandled errors",
                    function.metric_errors(statistic="Sum", period=_PERIOD),
                    0,
                )
            )
            specs.append(
                _AlarmSpec(
                    f"{title}Throttles",
                    f"The {name} function was throttled (reserved concurrency reached)",
                    function.metric_throttles(statistic="Sum", period=_PERIOD),
                    0,
                )
            )
        self.specs = tuple(specs)
        self.alarms = [self._alarm(spec) for spec in specs]

        dashboard = cloudwatch.Dashboard(self, "Dashboard")
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="API requests and errors",
                left=[api.rest_api.metric_count(period=_PERIOD)],
                right=[
                    api.rest_api.metric_client_error(period=_PERIOD),
                    api.rest_api.metric_server_error(period=_PERIOD),
                ],
            ),
            cloudwatch.GraphWidget(
                title="Context duration (ms)",
                left=[
                    context.metric_duration(statistic=stat, period=_PERIOD)
                    for stat in ("p50", "p99")
                ],
            ),
            cloudwatch.GraphWidget(
                title="Database",
                left=[database.metric_cpu()],
                right=[database.metric_connections()],
            ),
            cloudwatch.GraphWidget(
                title="Proxy",
                left=[proxy.metric("ClientConnections", "Maximum")],
                right=[proxy.metric("DatabaseConnectionsBorrowLatency", "p99")],
            ),
        )
        dashboard.add_widgets(cloudwatch.AlarmStatusWidget(alarms=self.alarms, width=24))

    def _alarm(self, spec: _AlarmSpec) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            spec.id,
            alarm_description=spec.description,
            metric=spec.metric,
            threshold=spec.threshold,
            evaluation_periods=spec.periods,
            comparison_operator=(
                cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD if spec.below
                else cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD),
            treat_missing_data=(
                cloudwatch.TreatMissingData.BREACHING if spec.missing_breaches
                else cloudwatch.TreatMissingData.NOT_BREACHING),
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        return alarm
