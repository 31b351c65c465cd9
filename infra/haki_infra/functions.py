"""One Lambda function of the service: its folder under ``functions/``, in the VPC, with the
layer of its architecture, X-Ray on, its own log group, and its sizing from the config; and
what every function of the stack shares (``logged_function``), the console's included."""

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from haki_infra.config import PROJECT_ROOT, FunctionSizing
from haki_infra.layer import RUNTIME, ModelLayer, lambda_architecture
from haki_infra.nag import acknowledge
from haki_infra.network import Network

_ASSET_EXCLUDES = ["__pycache__", "*.pyc", "tests"]


class HakiFunction(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        folder: str,
        handler: str,
        description: str,
        sizing: FunctionSizing,
        layer: ModelLayer,
        network: Network,
        security_group: ec2.ISecurityGroup,
        environment: Mapping[str, str],
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group, self.function = logged_function(
            self,
            folder=folder,
            exclude=_ASSET_EXCLUDES,
            handler=handler,
            description=description,
            architecture=lambda_architecture(layer.architecture),
            sizing=sizing,
            log_retention=log_retention,
            runtime_reason="Pinned to Python 3.12: the layer's native wheels (onnxruntime, "
            "psycopg, pydantic-core, tokenizers) are built for cp312; move both together",
            layers=[layer.layer],
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[security_group],
            tracing=lambda_.Tracing.ACTIVE,
            environment=dict(environment),
        )
        acknowledge(
            self.function,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaVPCAccessExecutionRole]",
            "AWS-managed policy Lambda needs to attach its network interfaces in the VPC",
        )
        acknowledge(
            self.function,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permission",
        )


def logged_function(
    scope: Construct,
    *,
    folder: str,
    exclude: list[str],
    handler: str,
    description: str,
    architecture: lambda_.Architecture,
    sizing: FunctionSizing,
    log_retention: logs.RetentionDays,
    runtime_reason: str,
    **options: Any,
) -> tuple[logs.LogGroup, lambda_.Function]:
    """The function of ``functions/<folder>`` under ``scope`` (as ``Function``, with ``options``
    on top), sized by ``sizing``, writing to a log group of its own (``Logs``); its pinned
    runtime acknowledged for ``runtime_reason``."""
    log_group = logs.LogGroup(
        scope, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
    )
    function = lambda_.Function(
        scope,
        "Function",
        description=description,
        runtime=RUNTIME,
        architecture=architecture,
        code=lambda_.Code.from_asset(str(PROJECT_ROOT / "functions" / folder), exclude=exclude),
        handler=handler,
        memory_size=sizing.memory_mb,
        timeout=Duration.seconds(sizing.timeout_s),
        reserved_concurrent_executions=sizing.reserved_concurrency,
        log_group=log_group,
        **options,
    )
    acknowledge(function, "AwsSolutions-L1", runtime_reason)
    acknowledge(
        function,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
        "AWSLambdaBasicExecutionRole]",
        "AWS-managed policy for writing the function's own logs; maintained by AWS",
    )
    return log_group, function
