"""EventBridge rules that run a function on a schedule: the stats aggregation every
``aggregation_rate_minutes``, and the migration function's scope-index task every
``scope_index_rate_minutes``."""

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct


class FunctionSchedule(Construct):
    """Run ``function`` every ``minutes``, with ``event`` as its input (EventBridge's own
    scheduled event when None). Both tasks are idempotent over their window and serialised by
    an advisory lock: a retried or late run is harmless, and one older than the next run is
    superseded by it (``max_event_age``)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, function: lambda_.IFunction, minutes: int,
        description: str, event: Mapping[str, str] | None = None, retry_attempts: int = 2,
    ) -> None:
        super().__init__(scope, construct_id)
        self.rule = events.Rule(
            self,
            "Rule",
            description=description,
            schedule=events.Schedule.rate(Duration.minutes(minutes)),
        )
        self.rule.add_target(
            targets.LambdaFunction(
                function,
                event=None if event is None else events.RuleTargetInput.from_object(dict(event)),
                retry_attempts=retry_attempts,
                max_event_age=Duration.minutes(minutes),
            )
        )
