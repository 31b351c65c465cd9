"""PostgreSQL 16 with pgvector: an RDS instance (default) or Aurora Serverless v2.

Private (isolated subnets, no public address), encrypted, TLS forced, IAM database
authentication on (RDS Proxy logs in as ``haki_app`` / ``haki_stats`` with IAM, end to end),
automated backups. The master user is the schema owner; its password is generated into
Secrets Manager and rotated. ``CREATE EXTENSION vector`` runs in migrations/0001_schema.sql.
"""

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_rds as rds
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from haki.roles import DATABASE_NAME
from haki_infra.config import Engine, HakiConfig
from haki_infra.nag import acknowledge
from haki_infra.network import Network

OWNER_USER = "haki_owner"
PORT = 5432
_PARAMETERS = {"rds.force_ssl": "1"}


class Database(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: HakiConfig, network: Network
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = network.security_group(
            self,
            "SecurityGroup",
            description="PostgreSQL: reachable from the proxy and the owner jobs",
        )
        credentials = rds.Credentials.from_generated_secret(OWNER_USER)
        common = {
            "vpc": network.vpc,
            "vpc_subnets": network.subnets,
            "security_groups": [self.security_group],
            "credentials": credentials,
            "storage_encrypted": True,
            "iam_authentication": True,
            "deletion_protection": not config.dev,
            "removal_policy": RemovalPolicy.DESTROY if config.dev else RemovalPolicy.SNAPSHOT,
            "cloudwatch_logs_exports": ["postgresql"],
            "cloudwatch_logs_retention": config.log_retention,
            "parameters": _PARAMETERS,
            "port": PORT,
        }
        self.resource: rds.DatabaseInstance | rds.DatabaseCluster
        if config.engine is Engine.AURORA:
            self.resource = rds.DatabaseCluster(
                self,
                "Cluster",
                engine=rds.DatabaseClusterEngine.aurora_postgres(
                    version=rds.AuroraPostgresEngineVersion.VER_16_13
                ),
                writer=rds.ClusterInstance.serverless_v2("Writer"),
                # Production keeps a reader in the other AZ so a failover promotes a warm
                # instance instead of waiting for a new one.
                readers=[]
                if config.dev and not config.read_replica
                else [rds.ClusterInstance.serverless_v2("Reader", scale_with_writer=True)],
                serverless_v2_min_capacity=config.aurora_min_acu,
                serverless_v2_max_capacity=config.aurora_max_acu,
                default_database_name=DATABASE_NAME,
                backup=rds.BackupProps(retention=Duration.days(7)),
                **common,
            )
            self.proxy_target = rds.ProxyTarget.from_cluster(self.resource)
            self.endpoint = self.resource.cluster_endpoint
        else:
            self.resource = rds.DatabaseInstance(
                self,
                "Instance",
                engine=rds.DatabaseInstanceEngine.postgres(
                    version=rds.PostgresEngineVersion.VER_16_13
                ),
                instance_type=ec2.InstanceType(config.instance_type),
                multi_az=not config.dev,
                allocated_storage=20,
                max_allocated_storage=200,
                storage_type=rds.StorageType.GP3,
                database_name=DATABASE_NAME,
                backup_retention=Duration.days(7),
                **common,
            )
            self.proxy_target = rds.ProxyTarget.from_instance(self.resource)
            self.endpoint = self.resource.instance_endpoint
            if config.dev:
                acknowledge(
                    self.resource,
                    "AwsSolutions-RDS3",
                    "dev mode: one AZ halves the instance cost; production synth is multi-AZ",
                )
        acknowledge(
            self.resource,
            "AwsSolutions-RDS11",
            "The database sits in isolated subnets and only the proxy, migration and rotation "
            "security groups reach it; a non-default port would add no protection",
        )
        if config.dev:
            acknowledge(
                self.resource,
                "AwsSolutions-RDS10",
                "dev mode (haki:dev=true) turns deletion protection off so the stack can be "
                "torn down; production keeps it on",
            )
        _acknowledge_log_retention_function(self)
        if self.resource.secret is None:  # generated credentials always create one
            raise RuntimeError("the database has no owner secret")
        self.secret: secretsmanager.ISecret = self.resource.secret

        rotation_group = network.security_group(
            self, "RotationSecurityGroup", description="Owner password rotation function"
        )
        network.secrets_endpoint.connections.allow_default_port_from(rotation_group)
        self.resource.add_rotation_single_user(
            automatically_after=Duration.days(30),
            endpoint=network.secrets_endpoint,
            security_group=rotation_group,
            vpc_subnets=network.subnets,
        )

    @property
    def connections(self) -> ec2.Connections:
        return self.resource.connections

    def grant_connect(self, grantee: iam.IGrantable, db_user: str) -> None:
        """``rds-db:connect`` on the database itself (used by the proxy's IAM login)."""
        self.resource.grant_connect(grantee, db_user)

    def metric_cpu(self) -> cloudwatch.Metric:
        return self.resource.metric_cpu_utilization(period=Duration.minutes(5))

    def metric_connections(self) -> cloudwatch.Metric:
        return self.resource.metric_database_connections(period=Duration.minutes(5))

    def metric_free_storage(self) -> cloudwatch.Metric:
        """Bytes left to write to: the instance's ``FreeStorageSpace`` (its gp3 volume, grown
        by storage autoscaling up to 200 GiB), or for Aurora, whose cluster volume grows by
        itself, each instance's ``FreeLocalStorage`` (sorts, temporary tables, logs)."""
        period = Duration.minutes(5)
        if isinstance(self.resource, rds.DatabaseCluster):
            return self.resource.metric_free_local_storage(period=period, statistic="Minimum")
        return self.resource.metric_free_storage_space(period=period, statistic="Minimum")

    def metric_freeable_memory(self) -> cloudwatch.Metric:
        return self.resource.metric_freeable_memory(period=Duration.minutes(5),
                                                    statistic="Minimum")


def _acknowledge_log_retention_function(scope: Construct) -> None:
    """The stack-wide function CDK adds to set the retention of the exported PostgreSQL logs.

    It is a singleton child of the stack, created by ``cloudwatch_logs_retention`` above.
    """
    stack = Stack.of(scope)
    for child in stack.node.children:
        if child.node.id.startswith("LogRetention"):
            acknowledge(
                child,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AWSLambdaBasicExecutionRole]",
                "CDK log-retention function: AWS-managed policy for its own logs",
            )
            acknowledge(
                child,
                "AwsSolutions-IAM5[Resource::*]",
                "CDK log-retention function sets retention on log groups RDS names at run time",
            )
