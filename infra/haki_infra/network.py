"""The VPC: isolated subnets only (no NAT, no internet route), and the one endpoint needed.

What reaches AWS APIs from inside the VPC, and how:
- API functions: nothing. The IAM token for RDS Proxy is signed locally
  (``generate_db_auth_token`` makes no call); logs, EMF metrics and X-Ray segments leave
  through the Lambda service, not the function's network interface.
- The migration function and the secret rotation function read/write the owner secret:
  a Secrets Manager interface endpoint, reachable only from the security groups granted.
"""

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from haki_infra.config import HakiConfig


class Network(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: HakiConfig) -> None:
        super().__init__(scope, construct_id)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24
                )
            ],
        )
        self.subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        # Rejected traffic only: the security signal (something tried a port it may not use)
        # at a fraction of the cost of logging every accepted flow.
        flow_log_group = logs.LogGroup(
            self,
            "FlowLogs",
            retention=config.log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.vpc.add_flow_log(
            "RejectedFlows",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.REJECT,
        )
        self.secrets_endpoint = self.vpc.add_interface_endpoint(
            "SecretsManager",
            service=ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
            subnets=self.subnets,
            private_dns_enabled=True,
            open=False,
            security_groups=[
                self.security_group(
                    self, "SecretsEndpointGroup", description="Secrets Manager endpoint"
                )
            ],
        )

    def security_group(
        self, scope: Construct, construct_id: str, *, description: str
    ) -> ec2.SecurityGroup:
        """A security group in this VPC with no egress: every flow is opened explicitly."""
        return ec2.SecurityGroup(
            scope, construct_id, vpc=self.vpc, description=description, allow_all_outbound=False
        )
