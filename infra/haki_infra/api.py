"""The REST API, built from ``haki_aws.routes.ROUTES`` (the table the local server also serves).

Two different keys, two different jobs (docs/deploy.md, "Keys"):
- ``Authorization: Bearer hk_...`` authenticates the tenant and fixes its project. The function
  checks it (sha256 lookup) in the same transaction that sets the row-level-security scope,
  so the check cannot drift from the data it guards, and local mode runs the same code.
- ``x-api-key`` is API Gateway's metering identity: it picks the usage plan whose per-client
  throttle and daily quota apply. It grants no data access by itself.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from haki_aws.routes import Route
from haki_infra.config import HakiConfig
from haki_infra.nag import acknowledge

STAGE_NAME = "prod"


@dataclass(frozen=True)
class _EdgeError:
    status: str
    code: str
    #: ``None`` keeps API Gateway's own message.
    message: str | None = None


#: Errors API Gateway answers itself, in the service's ``{"error": {code, message}}`` shape.
_EDGE_ERRORS: dict[apigw.ResponseType, _EdgeError] = {
    # The only required request parameter is the Authorization header.
    apigw.ResponseType.BAD_REQUEST_PARAMETERS: _EdgeError(
        "401", "unauthorized", "missing Authorization: Bearer header"
    ),
    apigw.ResponseType.THROTTLED: _EdgeError("429", "throttled"),
    apigw.ResponseType.QUOTA_EXCEEDED: _EdgeError("429", "quota_exceeded"),
    apigw.ResponseType.INVALID_API_KEY: _EdgeError("403", "invalid_usage_key"),
    apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN: _EdgeError("404", "not_found"),
    # API Gateway's own 10 MB ceiling; the functions refuse far smaller bodies the same way.
    apigw.ResponseType.REQUEST_TOO_LARGE: _EdgeError(
        "413", "payload_too_large", "request body over API Gateway's 10 MB limit"
    ),
    apigw.ResponseType.DEFAULT_5_XX: _EdgeError("503", "service_unavailable"),
}


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HakiConfig,
        routes: tuple[Route, ...],
        functions: Mapping[str, lambda_.IFunction],
    ) -> None:
        super().__init__(scope, construct_id)
        access_logs = logs.LogGroup(self, "AccessLogs", retention=config.log_retention)
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name="haki",
            description="Haki context assembler",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Execution logs (ERROR level) need the account-level API Gateway logging role.
            cloud_watch_role=True,
            deploy_options=apigw.StageOptions(
                stage_name=STAGE_NAME,
                throttling_rate_limit=config.throttle_rate,
                throttling_burst_limit=config.throttle_burst,
                tracing_enabled=True,
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=_access_log_format(),
            ),
        )
        # Parameters: the Authorization header is required, so a request without it is
        # answered 401 at the edge. Bodies: no JSON schema on purpose, the functions validate
        # them and answer with the contract's error codes (missing_scope, budget_exceeded...).
        validator = self.rest_api.add_request_validator(
            "Validator", validate_request_parameters=True, validate_request_body=True
        )
        for route in routes:
            self.rest_api.root.resource_for_path(route.path).add_method(
                route.method,
                apigw.LambdaIntegration(functions[route.function], allow_test_invoke=False),
                api_key_required=config.require_api_key,
                authorization_type=apigw.AuthorizationType.NONE,
                request_parameters={"method.request.header.Authorization": True},
                request_validator=validator,
            )
        for path, methods in _methods_by_path(routes).items():
            _add_method_not_allowed(self.rest_api.root.resource_for_path(path), methods)
        for response_type, error in _EDGE_ERRORS.items():
            message = f'"{error.message}"' if error.message else "$context.error.messageString"
            self.rest_api.add_gateway_response(
                f"{response_type.response_type}Response",
                type=response_type,
                status_code=error.status,
                templates={
                    "application/json": (
                        f'{{"error": {{"code": "{error.code}", "message": {message}}}}}'
                    )
                },
            )

        self.usage_plan = self.rest_api.add_usage_plan(
            "DefaultPlan",
            name="haki-default",
            description="Per-client throttle and daily quota for one x-api-key",
            throttle=apigw.ThrottleSettings(
                rate_limit=config.key_throttle_rate, burst_limit=config.key_throttle_burst
            ),
            quota=apigw.QuotaSettings(limit=config.key_quota_per_day, period=apigw.Period.DAY),
            api_stages=[
                apigw.UsagePlanPerApiStage(api=self.rest_api, stage=self.rest_api.deployment_stage)
            ],
        )
        #: A first usage key; tenants get their own with `aws apigateway create-api-key`.
        self.default_key = self.rest_api.add_api_key("DefaultKey")
        self.usage_plan.add_api_key(self.default_key)

        reason = (
            "Tenants authenticate with the hk_ bearer key, verified by the function against "
            "its sha256 in the same transaction that sets the row-level-security scope (and "
            "by the same code in local mode); an authorizer would duplicate that check"
        )
        acknowledge(self.rest_api, "AwsSolutions-APIG4", reason)
        acknowledge(self.rest_api, "AwsSolutions-COG4", reason)
        acknowledge(
            self.rest_api,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]",
            "The account-level role API Gateway uses to write execution logs; AWS-managed",
        )
        acknowledge(
            self.rest_api,
            "AwsSolutions-APIG3",
            "No WAF by default (from ~$6/month): the stage throttle, per-key usage plans and "
            "bearer-key checks bound abuse; attach a web ACL to the stage if needed",
        )

    @property
    def url(self) -> str:
        return self.rest_api.url


def _methods_by_path(routes: tuple[Route, ...]) -> dict[str, list[str]]:
    by_path: dict[str, list[str]] = {}
    for route in routes:
        by_path.setdefault(route.path, []).append(route.method)
    return by_path


def _add_method_not_allowed(resource: apigw.IResource, methods: list[str]) -> None:
    """``ANY`` on a routed resource answers every other method with 405 and ``Allow``, as
    the local server does (API Gateway would otherwise say 403 "Missing Authentication
    Token"). A mock integration: no function runs, nothing is metered."""
    allow = ", ".join(methods)
    body = ('{"error": {"code": "method_not_allowed", "message": '
            f'"$context.httpMethod is not allowed here; use {allow}"}}}}')
    resource.add_method(
        "ANY",
        apigw.MockIntegration(
            request_templates={"application/json": '{"statusCode": 405}'},
            passthrough_behavior=apigw.PassthroughBehavior.WHEN_NO_MATCH,
            integration_responses=[apigw.IntegrationResponse(
                status_code="405",
                response_parameters={"method.response.header.Allow": f"'{allow}'"},
                response_templates={"application/json": body},
            )],
        ),
        authorization_type=apigw.AuthorizationType.NONE,
        method_responses=[apigw.MethodResponse(
            status_code="405", response_parameters={"method.response.header.Allow": True})],
    )


def _access_log_format() -> apigw.AccessLogFormat:
    field = apigw.AccessLogField
    return apigw.AccessLogFormat.custom(
        "{"
        + ",".join(
            f'"{name}":"{value}"'
            for name, value in {
                "requestId": field.context_request_id(),
                "ip": field.context_identity_source_ip(),
                "method": field.context_http_method(),
                "resource": field.context_resource_path(),
                "status": field.context_status(),
                "protocol": field.context_protocol(),
                "responseLength": field.context_response_length(),
                "requestTime": field.context_request_time(),
                "integrationLatency": field.context_integration_latency(),
                "responseLatency": field.context_response_latency(),
                "apiKeyId": field.context_identity_api_key_id(),
                "errorType": field.context_error_response_type(),
                "xrayTraceId": field.context_xray_trace_id(),
            }.items()
        )
        + "}"
    )
