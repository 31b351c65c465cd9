"""Migrations on deploy: a custom resource whose handler applies ``migrations/`` as the owner.

The handler (``functions/migrate/app.py``) runs the core's migration runner, which is
idempotent and serialised by an advisory lock, so it may run on every update. It connects to
the database directly (not through the proxy, which accepts IAM logins of the runtime roles
only) with the owner secret, read through the VPC endpoint. A failure raises, the provider
reports FAILED, and CloudFormation fails and rolls back the deploy.

The resource's properties are the layer version (which carries the SQL files) and the
database endpoint: a new layer or a new database triggers an update, i.e. a migration run.
"""

from aws_cdk import CustomResource, Stack
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from haki_infra.config import HakiConfig
from haki_infra.database import Database
from haki_infra.functions import HakiFunction
from haki_infra.layer import ModelLayer
from haki_infra.nag import acknowledge
from haki_infra.network import Network


class Migrations(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HakiConfig,
        network: Network,
        database: Database,
        layer: ModelLayer,
    ) -> None:
        super().__init__(scope, construct_id)
        security_group = network.security_group(
            self, "SecurityGroup", description="Migration function: owner access to PostgreSQL"
        )
        self.handler = HakiFunction(
            self,
            "Handler",
            folder="migrate",
            handler="app.handler",
            description="Apply pending SQL migrations as the schema owner",
            sizing=config.sizing["migrate"],
            layer=layer,
            network=network,
            security_group=security_group,
            environment=config.runtime_env,
            log_retention=config.log_retention,
        )
        database.secret.grant_read(self.handler.function)
        database.connections.allow_default_port_from(security_group, "migrations as owner")
        network.secrets_endpoint.connections.allow_default_port_from(
            security_group, "migrations read the owner secret"
        )

        provider_logs = logs.LogGroup(self, "ProviderLogs", retention=config.log_retention)
        provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.handler.function,
            log_group=provider_logs,
        )
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=provider.service_token,
            resource_type="Custom::HakiMigrations",
            properties={
                "SecretArn": database.secret.secret_arn,
                "LayerVersionArn": layer.layer.layer_version_arn,
                "DatabaseHost": database.endpoint.hostname,
            },
        )
        # Never migrate a database that CloudFormation has not finished creating.
        self.resource.node.add_dependency(database.resource)

        acknowledge(
            provider,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AWSLambdaBasicExecutionRole]",
            "CDK provider framework function: AWS-managed policy for its own logs",
        )
        handler_id = Stack.of(self).resolve(
            Stack.of(self).get_logical_id(self.handler.function.node.default_child)
        )
        acknowledge(
            provider,
            f"AwsSolutions-IAM5[Resource::<{handler_id}.Arn>:*]",
            "CDK provider framework: may invoke any version of the migration function, only",
        )
