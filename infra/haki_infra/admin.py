"""Optional admin access (``-c haki:bastion=true``): a small SSM-managed host in the VPC.

The database has no public address and the VPC no route out, so the admin CLI
(``haki keys create ...``) reaches PostgreSQL through an SSM port forward via this host.
Session Manager needs three interface endpoints; deploy with the flag, create keys, then
deploy without it to remove the host and its endpoints (about $1.50/day while present).
"""

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from haki_infra.database import Database
from haki_infra.nag import acknowledge
from haki_infra.network import Network

_SSM_SERVICES = {
    "Ssm": ec2.InterfaceVpcEndpointAwsService.SSM,
    "SsmMessages": ec2.InterfaceVpcEndpointAwsService.SSM_MESSAGES,
    "Ec2Messages": ec2.InterfaceVpcEndpointAwsService.EC2_MESSAGES,
}


class AdminAccess(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, network: Network, database: Database
    ) -> None:
        super().__init__(scope, construct_id)
        security_group = network.security_group(
            self, "SecurityGroup", description="Admin bastion: SSM port forward to PostgreSQL"
        )
        for name, service in _SSM_SERVICES.items():
            endpoint_group = network.security_group(
                self, f"{name}EndpointGroup", description=f"{name} endpoint for the bastion"
            )
            endpoint = network.vpc.add_interface_endpoint(
                name,
                service=service,
                subnets=network.subnets,
                private_dns_enabled=True,
                open=False,
                security_groups=[endpoint_group],
            )
            endpoint.connections.allow_default_port_from(security_group, "bastion to SSM")
        self.host = ec2.BastionHostLinux(
            self,
            "Host",
            vpc=network.vpc,
            subnet_selection=network.subnets,
            security_group=security_group,
            instance_type=ec2.InstanceType("t4g.nano"),
            machine_image=ec2.MachineImage.latest_amazon_linux2023(
                cpu_type=ec2.AmazonLinuxCpuType.ARM_64
            ),
            require_imdsv2=True,
            block_devices=[
                ec2.BlockDevice(
                    device_name="/dev/xvda",
                    volume=ec2.BlockDeviceVolume.ebs(8, encrypted=True),
                )
            ],
        )
        database.connections.allow_default_port_from(security_group, "admin CLI via SSM")
        for finding in ("Action::ssmmessages:*", "Action::ec2messages:*", "Resource::*"):
            acknowledge(
                self.host,
                f"AwsSolutions-IAM5[{finding}]",
                "The Session Manager agent's standard permissions (CDK BastionHostLinux); "
                "these SSM channel APIs support no resource-level scoping",
            )
        acknowledge(
            self.host,
            "AwsSolutions-EC28",
            "Temporary admin host: detailed monitoring adds cost and no signal",
        )
        acknowledge(
            self.host,
            "AwsSolutions-EC29",
            "Temporary admin host, removed by redeploying without haki:bastion",
        )
