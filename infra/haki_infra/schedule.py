"""EventBridge rule that runs the stats aggregation every ``aggregation_rate_minutes``."""

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct


class AggregationSchedule(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, function: lambda_.IFunction, minutes: int
    ) -> None:
        super().__init__(scope, construct_id)
        self.rule = events.Rule(
            self,
            "Rule",
            description="Roll context calls up into the stats buckets",
            schedule=events.Schedule.rate(Duration.minutes(minutes)),
        )
        # The aggregation is idempotent over its window: a retried or late run is harmless,
        # and one older than the next run is superseded by it.
        self.rule.add_target(
            targets.LambdaFunction(
                function, retry_attempts=2, max_event_age=Duration.minutes(minutes)
            )
        )
