"""The console under the API's own domain: ``GET /console`` and ``GET /console/{asset}`` on
the REST API, served by a small function (``functions/console``) that returns the page and
its static files.

The page and its files hold no data, so these two methods need no key (a browser cannot
attach one to a page load); everything the page shows it reads through the API's data
routes, with the tenant's key, under their auth like any other client. The function needs
no database, no layer and no network: it runs outside the VPC with the smallest memory, and
a reserved concurrency of its own (``haki:sizing``'s ``console``).
"""

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from haki_infra.config import FunctionSizing
from haki_infra.functions import logged_function
from haki_infra.nag import acknowledge

#: The page's resource under the API root; its files are ``{PATH}/{asset}``.
PATH = "console"


class Console(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        rest_api: apigw.RestApi,
        sizing: FunctionSizing,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group, self.function = logged_function(
            self,
            folder="console",
            exclude=["__pycache__", "*.pyc", "vendor/README.md"],
            handler="app.handler",
            description="haki: the console's page and static files",
            architecture=lambda_.Architecture.ARM_64,
            # Public methods (no key): a flood of page loads stops at the sizing's reserved
            # concurrency instead of taking the account's unreserved pool.
            sizing=sizing,
            log_retention=log_retention,
            runtime_reason="Pinned to Python 3.12 with the service's other functions; moved "
            "together",
        )
        integration = apigw.LambdaIntegration(self.function, allow_test_invoke=False)
        page = rest_api.root.add_resource(PATH)
        self.methods = [
            page.add_method("GET", integration, authorization_type=apigw.AuthorizationType.NONE),
            page.add_resource("{asset}").add_method(
                "GET", integration, authorization_type=apigw.AuthorizationType.NONE
            ),
        ]
        reason = (
            "The console's page and static files hold no data and need no key (a browser "
            "cannot attach one to a page load); the data routes the page calls keep their auth"
        )
        for method in self.methods:
            acknowledge(method, "AwsSolutions-APIG4", reason)
            acknowledge(method, "AwsSolutions-COG4", reason)
