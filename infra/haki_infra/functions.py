"""One Lambda function of the service: its folder under ``functions/``, in the VPC, with the
layer of its architecture, X-Ray on, its own log group, and its sizing from the config."""

from collections.abc import Mapping

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
        self.log_group = logs.LogGroup(
            self, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=RUNTIME,
            architecture=lambda_architecture(layer.architecture),
            code=lambda_.Code.from_asset(
                str(PROJECT_ROOT / "functions" / folder), exclude=_ASSET_EXCLUDES
            ),
            handler=handler,
            layers=[layer.layer],
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[security_group],
            memory_size=sizing.memory_mb,
            timeout=Duration.seconds(sizing.timeout_s),
            reserved_concurrent_executions=sizing.reserved_concurrency,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            environment=dict(environment),
        )
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            "Pinned to Python 3.12: the layer's native wheels (onnxruntime, psycopg, "
            "pydantic-core, tokenizers) are built for cp312; move both together",
        )
        acknowledge(
            self.function,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]",
            "AWS-managed policy for writing the function's own logs; maintained by AWS",
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
