"""The Haki stack: builds each concern's construct, then wires and grants between them."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import App, CfnOutput, Stack, Validations
from aws_cdk import aws_secretsmanager as secretsmanager
from cdk_nag import AwsSolutionsChecks
from constructs import Construct

from haki.roles import DATABASE_NAME, Role
from haki_aws.routes import ROUTES
from haki_infra.admin import AdminAccess
from haki_infra.api import Api
from haki_infra.config import HakiConfig
from haki_infra.console import Console
from haki_infra.database import Database
from haki_infra.functions import HakiFunction
from haki_infra.layer import ModelLayer
from haki_infra.migrations import Migrations
from haki_infra.monitoring import Monitoring
from haki_infra.nag import acknowledge
from haki_infra.network import Network
from haki_infra.proxy import Proxy
from haki_infra.schedule import FunctionSchedule


@dataclass(frozen=True)
class ServiceFunction:
    """A function other than the migration one."""

    key: str
    #: Folder under ``functions/``; the API routes name their function by it
    #: (``haki_aws.routes.ROUTES``).
    folder: str
    handler: str
    #: The database role it logs in as, through the proxy.
    db_user: Role
    description: str


SERVICE_FUNCTIONS = (
    ServiceFunction("context", "context", "app.handler", Role.APP, "POST /v1/context"),
    ServiceFunction("inspect", "inspect", "app.handler", Role.APP, "GET /v1/inspect/{trace_id}"),
    ServiceFunction("stats", "stats", "app.handler", Role.APP, "GET /v1/stats/overview"),
    # The writes that embed, and the memory routes that run SQL only (functions/*/app.py).
    ServiceFunction("ingest", "ingest", "app.handler", Role.APP, "POST /v1/events, /v1/facts"),
    ServiceFunction(
        "memory", "memory", "app.handler", Role.APP, "Facts, conflicts, forget (SQL only)"
    ),
    # The API's REQUEST authorizer: checks the hk_ key, names the project's usage key.
    ServiceFunction(
        "authorizer", "authorizer", "app.handler", Role.APP, "API authorizer (hk_ key)"
    ),
    # Liveness and readiness without a key: its own small function, so unauthenticated
    # probes never take the tenant functions' concurrency (functions/health).
    ServiceFunction(
        "health", "health", "app.handler", Role.APP, "GET /v1/health, /v1/health/ready (no key)"
    ),
    # The scheduled rollup lives beside the overview handler, reading across projects.
    ServiceFunction(
        "aggregate", "stats", "app.aggregate_handler", Role.STATS, "Scheduled stats rollup"
    ),
)


#: The functions that may read a replica (haki:read_replica): inspect and the stats overview.
#: The context and write functions and the rollup never do (read-after-write, and the rollup's
#: watermark must see every committed call).
READER_FUNCTIONS = frozenset({"inspect", "stats"})


class HakiStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, *, config: HakiConfig) -> None:
        super().__init__(
            scope,
            construct_id,
            description="Haki context assembler: API, functions, PostgreSQL + pgvector",
        )
        network = Network(self, "Network", config=config)
        database = Database(self, "Database", config=config, network=network)
        proxy = Proxy(self, "Proxy", network=network, database=database)
        reader_host = proxy.add_reader_endpoint() if config.read_replica else None
        layer = ModelLayer(
            self,
            "ModelLayer",
            layer_dir=config.resolved_layer_dir,
            architecture=config.architecture,
        )
        runtime_group = network.security_group(
            self,
            "FunctionsSecurityGroup",
            description="Service functions: may reach the proxy only",
        )
        proxy.allow_from(runtime_group, "functions to the proxy")
        network.secrets_endpoint.connections.allow_default_port_from(
            runtime_group, "functions read the log salt's secret")

        # The key of the subject digest in logs (docs/security.md, "Logs"): generated once per
        # deployment; the functions get its ARN, read it at cold start (haki_aws.secrets) and
        # may read that secret only. Its value is never in their configuration.
        log_salt = secretsmanager.Secret(
            self, "LogSalt", description="haki: the key of the subject digest in logs",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=48, exclude_punctuation=True))
        acknowledge(log_salt, "AwsSolutions-SMG4",
                    "A rotated key would only break the correlation of log lines across it; "
                    "nothing is encrypted or authenticated with it.")

        self.functions: dict[str, HakiFunction] = {}
        for spec in SERVICE_FUNCTIONS:
            function = HakiFunction(
                self,
                f"{spec.key.capitalize()}Function",
                folder=spec.folder,
                handler=spec.handler,
                description=f"haki: {spec.description}",
                sizing=config.sizing[spec.key],
                layer=layer,
                network=network,
                security_group=runtime_group,
                environment={
                    **config.runtime_env,
                    "HAKI_DB_HOST": proxy.endpoint,
                    "HAKI_DB_PORT": str(proxy.port),
                    "HAKI_DB_NAME": DATABASE_NAME,
                    "HAKI_DB_USER": spec.db_user.value,
                    "HAKI_DB_IAM_AUTH": "1",
                    "HAKI_LOG_SALT_SECRET_ARN": log_salt.secret_arn,
                    **({"HAKI_DB_READER_HOST": reader_host}
                       if reader_host and spec.key in READER_FUNCTIONS else {}),
                },
                log_retention=config.log_retention,
            )
            proxy.grant_connect(function.function, spec.db_user)
            log_salt.grant_read(function.function)
            self.functions[spec.key] = function
        lambdas = {key: f.function for key, f in self.functions.items()}

        self.migrations = Migrations(
            self, "Migrations", config=config, network=network, database=database, layer=layer
        )
        # Functions and the API must not serve a schema older than their code.
        for function in self.functions.values():
            function.node.add_dependency(self.migrations.resource)

        api = Api(self, "Api", config=config, routes=ROUTES, functions=lambdas,
                  authorizer=lambdas["authorizer"])
        self.console = Console(self, "Console", rest_api=api.rest_api,
                               sizing=config.sizing["console"],
                               log_retention=config.log_retention)
        FunctionSchedule(
            self,
            "AggregationSchedule",
            function=lambdas["aggregate"],
            minutes=config.aggregation_rate_minutes,
            description="Roll context calls up into the stats buckets",
        )
        if config.scope_index_rate_minutes > 0:
            # The owner task (haki.db.scope_indexes) runs where the owner secret is readable;
            # an interrupted build is dropped and built again by the next run.
            FunctionSchedule(
                self,
                "ScopeIndexSchedule",
                function=self.migrations.handler.function,
                minutes=config.scope_index_rate_minutes,
                description="Build and drop the big subjects' own indexes",
                event={"task": "scope_indexes", "SecretArn": database.secret.secret_arn},
                retry_attempts=1,
            )
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            config=config,
            api=api,
            functions=lambdas,
            database=database,
            proxy=proxy,
        )

        if config.bastion:
            admin = AdminAccess(self, "Admin", network=network, database=database)
            CfnOutput(self, "BastionInstanceId", value=admin.host.instance_id)

        CfnOutput(self, "ApiUrl", value=api.url, description="Base URL of the API")
        CfnOutput(
            self, "ConsoleUrl", value=f"{api.url}console/", description="The console's page"
        )
        CfnOutput(
            self,
            "UsagePlanId",
            value=api.usage_plan.usage_plan_id,
            description="Usage plan a project's usage key joins (docs/deploy.md, Keys)",
        )
        if api.domain is not None:
            CfnOutput(self, "DomainTarget", value=api.domain.domain_name_alias_domain_name,
                      description="Regional name the custom domain's DNS record points to")
        CfnOutput(self, "DatabaseSecretArn", value=database.secret.secret_arn)
        CfnOutput(self, "DatabaseHost", value=database.endpoint.hostname)
        CfnOutput(self, "ProxyEndpoint", value=proxy.endpoint)


def build_app(
    context: Mapping[str, Any] | None = None, *, outdir: str | None = None
) -> tuple[App, HakiStack]:
    """The app as ``cdk synth`` builds it: the stack (named by ``haki:stack_name``, default
    ``Haki``) plus the AwsSolutions checks.

    Under the CDK CLI both arguments stay ``None`` (the CLI passes context and output folder
    through the environment); tests pass ``cdk.json``'s context and a temporary folder.
    """
    app = App(context=dict(context) if context is not None else None, outdir=outdir)
    config = HakiConfig.from_context(app.node)
    stack = HakiStack(app, config.stack_name, config=config)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack
