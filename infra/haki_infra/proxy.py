"""RDS Proxy in front of the database: TLS required, IAM authentication end to end.

Clients (the functions) log in with an IAM token for ``haki_app`` or ``haki_stats``; the proxy
logs in to PostgreSQL with IAM as well (``DefaultAuthScheme: IAM_AUTH``), so no database
password exists for the runtime roles at all. The proxy registers no secret, which means the
owner cannot come through it: the owner's jobs connect to the database directly.
"""

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_rds as rds
from constructs import Construct

from haki.roles import Role
from haki_infra.database import PORT, Database
from haki_infra.network import Network

#: Database users reached through the proxy (created by the schema, granted ``rds_iam``).
PROXY_USERS = (Role.APP, Role.STATS)


class Proxy(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, network: Network, database: Database
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = network.security_group(
            self, "SecurityGroup", description="RDS Proxy: reachable from the functions only"
        )
        role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("rds.amazonaws.com"))
        for user in PROXY_USERS:
            database.grant_connect(role, user.value)
        self.proxy = rds.DatabaseProxy(
            self,
            "Proxy",
            proxy_target=database.proxy_target,
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[self.security_group],
            role=role,
            require_tls=True,
            default_auth_scheme=rds.DefaultAuthScheme.IAM_AUTH,
            # The functions keep one connection per container; idle containers release them.
            idle_client_timeout=Duration.minutes(15),
            borrow_timeout=Duration.seconds(5),
            max_connections_percent=90,
        )
        self.security_group.connections.allow_to(
            database.connections, ec2.Port.tcp(PORT), "proxy to PostgreSQL"
        )
        self.endpoint = self.proxy.endpoint
        self.port = PORT
        #: The read-only endpoint over the cluster's readers (``add_reader_endpoint``).
        self.reader_endpoint: str | None = None
        self._network = network

    def add_reader_endpoint(self) -> str:
        """A READ_ONLY proxy endpoint (Aurora): same proxy, same IAM users, the readers'
        connections. Returns its host name."""
        endpoint = rds.CfnDBProxyEndpoint(
            self,
            "ReadOnlyEndpoint",
            db_proxy_endpoint_name=f"{self.proxy.db_proxy_name}-ro",
            db_proxy_name=self.proxy.db_proxy_name,
            vpc_subnet_ids=self._network.vpc.select_subnets(
                subnet_type=ec2.SubnetType.PRIVATE_ISOLATED).subnet_ids,
            vpc_security_group_ids=[self.security_group.security_group_id],
            target_role="READ_ONLY",
        )
        self.reader_endpoint = endpoint.attr_endpoint
        return self.reader_endpoint

    def allow_from(self, peer: ec2.IConnectable, description: str) -> None:
        self.proxy.connections.allow_from(peer, ec2.Port.tcp(PORT), description)

    def grant_connect(self, grantee: iam.IGrantable, db_user: Role) -> None:
        if db_user not in PROXY_USERS:
            raise ValueError(f"{db_user} cannot log in through the proxy")
        self.proxy.grant_connect(grantee, db_user.value)

    def metric(self, name: str, statistic: str) -> cloudwatch.Metric:
        """A proxy-wide CloudWatch metric (namespace ``AWS/RDS``, dimension ``ProxyName``)."""
        return cloudwatch.Metric(
            namespace="AWS/RDS",
            metric_name=name,
            dimensions_map={"ProxyName": self.proxy.db_proxy_name},
            statistic=statistic,
            period=Duration.minutes(5),
        )
