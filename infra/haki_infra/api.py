"""The REST API, built from ``haki_aws.routes.ROUTES`` (the table the local server also serves).

One credential (docs/decisions/2026-12-03-one-credential-authorizer.md): a tenant sends
``Authorization: Bearer hk_...`` and nothing else. The public routes of the table (the health
checks, ``Route.public``) run no authorizer and meter no usage key.
- A REQUEST authorizer (``functions/authorizer``), cached by API Gateway per Authorization
  value, checks the key (sha256 lookup, the same code as the functions) and names the
  project's usage key (``usageIdentifierKey``); the RestApi takes API keys from the authorizer
  (``apiKeySource: AUTHORIZER``), so the usage plan's throttle and daily quota apply per
  project without the caller holding a second key. An ``x-api-key`` header is never read.
- The function checks the key again in the same transaction that sets the row-level-security
  scope: a key revoked within the authorizer's cache TTL is refused there.

An AWS WAFv2 web ACL guards the stage unless ``haki:waf=false``; optional, a custom domain
name (``haki:domain_name``); the default execute-api endpoint and the domain both pin TLS 1.2+.
"""

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from haki_aws.routes import EDGE_ERRORS, Route
from haki_infra.config import HakiConfig
from haki_infra.nag import acknowledge

STAGE_NAME = "prod"
#: The TLS security policy of the default endpoint and of a custom domain: TLS 1.2 minimum.
TLS_POLICY = apigw.SecurityPolicy.TLS_1_2
#: The AWS managed rule groups of the optional web ACL, and the rules of the common set set to
#: count only: its 8 KB body limit would refuse valid context calls and batch writes (the
#: functions bound bodies themselves, up to 1 MiB).
WAF_MANAGED_RULES = ("AWSManagedRulesCommonRuleSet",)
WAF_COUNT_ONLY = ("SizeRestrictions_BODY",)


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HakiConfig,
        routes: tuple[Route, ...],
        functions: Mapping[str, lambda_.IFunction],
        authorizer: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        access_logs = logs.LogGroup(self, "AccessLogs", retention=config.log_retention)
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=config.stack_name.lower(),
            description="Haki context assembler",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Usage plans meter the key the authorizer names, never an x-api-key header.
            api_key_source_type=apigw.ApiKeySourceType.AUTHORIZER,
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
        rest_api = self.rest_api.node.default_child
        assert isinstance(rest_api, apigw.CfnRestApi)
        rest_api.security_policy = TLS_POLICY.value
        self.authorizer = apigw.RequestAuthorizer(
            self,
            "Authorizer",
            handler=authorizer,
            identity_sources=[apigw.IdentitySource.header("Authorization")],
            results_cache_ttl=Duration.seconds(config.authorizer_cache_seconds),
        )
        # Parameters: the Authorization header is required, so a request without it is
        # answered 401 at the edge. Bodies: no JSON schema on purpose, the functions validate
        # them and answer with the contract's error codes (missing_scope, budget_exceeded...).
        validator = self.rest_api.add_request_validator(
            "Validator", validate_request_parameters=True, validate_request_body=True
        )
        for route in routes:
            integration = apigw.LambdaIntegration(functions[route.function],
                                                  allow_test_invoke=False)
            resource = self.rest_api.root.resource_for_path(route.path)
            if route.public:  # the health checks: no key, no usage plan
                _acknowledge_public(resource.add_method(
                    route.method, integration, authorization_type=apigw.AuthorizationType.NONE))
                continue
            resource.add_method(
                route.method,
                integration,
                # The key the authorizer names (apiKeySource AUTHORIZER): the usage plan meters it.
                api_key_required=True,
                authorizer=self.authorizer,
                authorization_type=apigw.AuthorizationType.CUSTOM,
                request_parameters={"method.request.header.Authorization": True},
                request_validator=validator,
            )
        public_paths = {route.path for route in routes if route.public}
        for path, methods in _methods_by_path(routes).items():
            _add_method_not_allowed(self.rest_api.root.resource_for_path(path), methods,
                                    None if path in public_paths else self.authorizer)
        for response_type, error in EDGE_ERRORS.items():
            message = f'"{error.message}"' if error.message else "$context.error.messageString"
            self.rest_api.add_gateway_response(
                f"{response_type}Response",
                type=apigw.ResponseType.of(response_type),
                status_code=str(error.status),
                templates={
                    "application/json": (
                        f'{{"error": {{"code": "{error.code}", "message": {message}}}}}'
                    )
                },
            )

        self.usage_plan = self.rest_api.add_usage_plan(
            "DefaultPlan",
            name=f"{config.stack_name.lower()}-default",
            description="Per-project throttle and daily quota (the usage key the authorizer names)",
            throttle=apigw.ThrottleSettings(
                rate_limit=config.key_throttle_rate, burst_limit=config.key_throttle_burst
            ),
            quota=apigw.QuotaSettings(limit=config.key_quota_per_day, period=apigw.Period.DAY),
            api_stages=[
                apigw.UsagePlanPerApiStage(api=self.rest_api, stage=self.rest_api.deployment_stage)
            ],
        )
        # A project's usage key is added to this plan when its first hk_ key is made
        # (docs/deploy.md, "Keys"); the stack creates none.
        self.web_acl = _web_acl(self, config, self.rest_api) if config.waf else None
        self.domain = _domain(self, config, self.rest_api) if config.domain_name else None

        acknowledge(
            self.rest_api,
            "AwsSolutions-COG4",
            "Tenants authenticate with their hk_ key through the Lambda REQUEST authorizer "
            "(functions/authorizer); there is no Cognito user pool",
        )
        acknowledge(
            self.rest_api,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]",
            "The account-level role API Gateway uses to write execution logs; AWS-managed",
        )
        if self.web_acl is None:
            acknowledge(
                self.rest_api,
                "AwsSolutions-APIG3",
                "The web ACL was turned off with haki:waf=false: the stage throttle, "
                "per-project usage plans and the key authorizer still bound abuse",
            )

    @property
    def url(self) -> str:
        return self.rest_api.url


def _web_acl(scope: Construct, config: HakiConfig, api: apigw.RestApi) -> wafv2.CfnWebACL:
    """A regional web ACL on the stage: the AWS common rule set (its body size rule counting
    only) and a per-IP rate limit over five minutes."""

    def visibility(name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
        return wafv2.CfnWebACL.VisibilityConfigProperty(
            cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True)

    rules = [
        wafv2.CfnWebACL.RuleProperty(
            name=group,
            priority=priority,
            override_action=wafv2.CfnWebACL.OverrideActionProperty(none={}),
            statement=wafv2.CfnWebACL.StatementProperty(
                managed_rule_group_statement=wafv2.CfnWebACL.ManagedRuleGroupStatementProperty(
                    vendor_name="AWS",
                    name=group,
                    rule_action_overrides=[
                        wafv2.CfnWebACL.RuleActionOverrideProperty(
                            name=rule, action_to_use=wafv2.CfnWebACL.RuleActionProperty(count={}))
                        for rule in WAF_COUNT_ONLY
                    ],
                )
            ),
            visibility_config=visibility(group),
        )
        for priority, group in enumerate(WAF_MANAGED_RULES)
    ]
    rules.append(wafv2.CfnWebACL.RuleProperty(
        name="RatePerIp",
        priority=len(rules),
        action=wafv2.CfnWebACL.RuleActionProperty(block={}),
        statement=wafv2.CfnWebACL.StatementProperty(
            rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                limit=config.waf_rate_limit, aggregate_key_type="IP", evaluation_window_sec=300)
        ),
        visibility_config=visibility("RatePerIp"),
    ))
    acl = wafv2.CfnWebACL(
        scope,
        "WebAcl",
        scope="REGIONAL",
        default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
        visibility_config=visibility("haki"),
        rules=rules,
    )
    wafv2.CfnWebACLAssociation(
        scope, "WebAclAssociation",
        resource_arn=api.deployment_stage.stage_arn, web_acl_arn=acl.attr_arn)
    return acl


def _domain(scope: Construct, config: HakiConfig, api: apigw.RestApi) -> apigw.DomainName:
    """The custom domain name, TLS 1.2+, mapped to the stage (its DNS record is the
    operator's: a CNAME or alias to the domain's regional name)."""
    assert config.domain_name and config.certificate_arn  # checked by HakiConfig
    domain = apigw.DomainName(
        scope,
        "Domain",
        domain_name=config.domain_name,
        certificate=acm.Certificate.from_certificate_arn(
            scope, "Certificate", config.certificate_arn),
        endpoint_type=apigw.EndpointType.REGIONAL,
        security_policy=TLS_POLICY,
    )
    domain.add_base_path_mapping(api, stage=api.deployment_stage)
    return domain


def _methods_by_path(routes: tuple[Route, ...]) -> dict[str, list[str]]:
    by_path: dict[str, list[str]] = {}
    for route in routes:
        by_path.setdefault(route.path, []).append(route.method)
    return by_path


def _add_method_not_allowed(resource: apigw.IResource, methods: list[str],
                            authorizer: apigw.IAuthorizer | None) -> None:
    """``ANY`` on a routed resource answers every other method with 405 and ``Allow``, as
    the local server does (API Gateway would otherwise say 403 "Missing Authentication
    Token"). A mock integration: no function runs; behind the authorizer and metered like
    every method, so an unauthenticated caller learns nothing of the routes, except on the
    public health paths (``authorizer`` None), which need no key."""
    allow = ", ".join(methods)
    body = ('{"error": {"code": "method_not_allowed", "message": '
            f'"$context.httpMethod is not allowed here; use {allow}"}}}}')
    method = resource.add_method(
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
        api_key_required=authorizer is not None,
        authorizer=authorizer,
        authorization_type=(apigw.AuthorizationType.NONE if authorizer is None
                            else apigw.AuthorizationType.CUSTOM),
        method_responses=[apigw.MethodResponse(
            status_code="405", response_parameters={"method.response.header.Allow": True})],
    )
    if authorizer is None:
        _acknowledge_public(method)


def _acknowledge_public(method: apigw.Method) -> None:
    """A method of a public health path: no key by design."""
    for rule in ("AwsSolutions-APIG4", "AwsSolutions-COG4"):
        acknowledge(method, rule, "A health check (liveness, readiness) for load balancers and "
                    "monitors: no key by design; it reads no tenant data, says nothing of the "
                    "deployment, and runs in its own function of reserved concurrency 2")


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
                "projectId": field.context_authorizer("project_id"),
                "authorizerLatency": field.context_authorizer_integration_latency(),
                "errorType": field.context_error_response_type(),
                "xrayTraceId": field.context_xray_trace_id(),
            }.items()
        )
        + "}"
    )
