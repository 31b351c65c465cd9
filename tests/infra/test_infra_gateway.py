"""The API's edge, synthesized: one credential (the hk_ key, checked by the REQUEST authorizer,
which names the usage key the plan meters), the WAF (on unless turned off), and the TLS
policy."""

from collections.abc import Callable
from typing import Any

import pytest
from infra_synth import Synth

from haki_aws.routes import EDGE_ERRORS, ROUTES


@pytest.fixture(scope="module")
def default(synth_factory: Callable[[dict[str, Any]], Synth]) -> Synth:
    return synth_factory({})


@pytest.fixture(scope="module")
def guarded(synth_factory: Callable[[dict[str, Any]], Synth]) -> Synth:
    # Strings, as `cdk deploy -c key=value` passes them.
    return synth_factory({
        "haki:waf_rate_limit": "500",
        "haki:authorizer_cache_seconds": "60",
        "haki:domain_name": "memory.example.com",
        "haki:certificate_arn": "arn:aws:acm:eu-west-3:123456789012:certificate/abc",
    })


def _one(synth: Synth, resource_type: str) -> tuple[str, dict[str, Any]]:
    resources = synth.resources(resource_type)
    assert len(resources) == 1, list(resources)
    return next(iter(resources.items()))


def test_the_rest_api_takes_usage_keys_from_the_authorizer_only(default: Synth) -> None:
    _, api = _one(default, "AWS::ApiGateway::RestApi")
    assert api["Properties"]["ApiKeySourceType"] == "AUTHORIZER"


def test_the_authorizer_is_the_key_function_cached_per_authorization_header(
        default: Synth) -> None:
    _, authorizer = _one(default, "AWS::ApiGateway::Authorizer")
    props = authorizer["Properties"]
    assert props["Type"] == "REQUEST"
    assert props["IdentitySource"] == "method.request.header.Authorization"
    # A revoked key passes the edge (and is metered) this long at most.
    assert props["AuthorizerResultTtlInSeconds"] == 30
    function_id = default.logical_id(default.stack.functions["authorizer"].function)
    uri = str(props["AuthorizerUri"])
    assert function_id in uri
    function = default.resources("AWS::Lambda::Function")[function_id]["Properties"]
    assert function["Handler"] == "app.handler"
    assert "VpcConfig" in function  # it reaches the key store through the proxy


def test_every_method_uses_the_authorizer_and_is_metered(default: Synth) -> None:
    """...but those of the public health paths, which need no key."""
    (authorizer_id, _) = _one(default, "AWS::ApiGateway::Authorizer")
    paths = default.resource_paths()
    public_paths = {r.path for r in ROUTES if r.public}
    api, console, public = [], [], []
    for method in default.resources("AWS::ApiGateway::Method").values():
        path = paths[method["Properties"]["ResourceId"]["Ref"]]
        group = console if path.startswith("/console") else (
            public if path in public_paths else api)
        group.append(method["Properties"])
    # Every route, and the ANY (405) method of every routed path.
    assert len(api) + len(public) == len(ROUTES) + len({r.path for r in ROUTES})
    assert len(public) == 2 * len(public_paths)
    for props in public:
        assert props["AuthorizationType"] == "NONE" and not props.get("ApiKeyRequired")
    for props in api:
        assert props["AuthorizationType"] == "CUSTOM", props["HttpMethod"]
        assert props["AuthorizerId"] == {"Ref": authorizer_id}
        # Required, and with the AUTHORIZER source it is the authorizer's, never a header.
        assert props["ApiKeyRequired"] is True
        assert not any("x-api-key" in name.lower()
                       for name in props.get("RequestParameters", {}))
    # The console's page and files are static and public (the page asks for the key); they
    # are only ever read.
    assert console and all(p["HttpMethod"] == "GET" for p in console)


def test_the_usage_plan_throttles_and_meters_per_key_on_the_stage(default: Synth) -> None:
    _, plan = _one(default, "AWS::ApiGateway::UsagePlan")
    assert plan["Properties"]["Throttle"] == {"BurstLimit": 40, "RateLimit": 20}
    assert plan["Properties"]["Quota"] == {"Limit": 200000, "Period": "DAY"}
    stage_id, _ = _one(default, "AWS::ApiGateway::Stage")
    assert plan["Properties"]["ApiStages"][0]["Stage"] == {"Ref": stage_id}


def test_a_refused_key_is_401_and_a_failing_authorizer_503(default: Synth) -> None:
    responses = {r["Properties"]["ResponseType"]: r["Properties"]
                 for r in default.resources("AWS::ApiGateway::GatewayResponse").values()}
    for response_type in ("UNAUTHORIZED", "ACCESS_DENIED"):
        assert responses[response_type]["StatusCode"] == "401"
        assert '"code": "unauthorized"' in (
            responses[response_type]["ResponseTemplates"]["application/json"])
    assert responses["AUTHORIZER_FAILURE"]["StatusCode"] == "503"
    assert set(responses) == set(EDGE_ERRORS)


def test_the_default_endpoint_pins_tls_1_2(default: Synth) -> None:
    _, api = _one(default, "AWS::ApiGateway::RestApi")
    assert api["Properties"]["SecurityPolicy"] == "TLS_1_2"
    default.template.resource_count_is("AWS::ApiGateway::DomainName", 0)


def test_the_waf_guards_the_stage_by_default(default: Synth) -> None:
    acl_id, acl = _one(default, "AWS::WAFv2::WebACL")
    rules = {rule["Name"]: rule for rule in acl["Properties"]["Rules"]}
    assert rules["RatePerIp"]["Statement"]["RateBasedStatement"]["Limit"] == 2000
    _, association = _one(default, "AWS::WAFv2::WebACLAssociation")
    assert association["Properties"]["WebACLArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}


def test_a_flag_turns_the_waf_off_and_the_stack_still_passes_cdk_nag(
        synth_factory: Callable[[dict[str, Any]], Synth]) -> None:
    unguarded = synth_factory({"haki:waf": "false"})
    unguarded.template.resource_count_is("AWS::WAFv2::WebACL", 0)
    unguarded.template.resource_count_is("AWS::WAFv2::WebACLAssociation", 0)
    assert unguarded.violations == []


def test_guarded_variant_passes_cdk_nag(guarded: Synth) -> None:
    assert guarded.violations == []


def test_waf_guards_the_stage_with_the_common_rules_and_a_rate_limit(guarded: Synth) -> None:
    acl_id, acl = _one(guarded, "AWS::WAFv2::WebACL")
    props = acl["Properties"]
    assert props["Scope"] == "REGIONAL"
    assert props["DefaultAction"] == {"Allow": {}}
    rules = {rule["Name"]: rule for rule in props["Rules"]}
    managed = rules["AWSManagedRulesCommonRuleSet"]["Statement"]["ManagedRuleGroupStatement"]
    assert managed["VendorName"] == "AWS"
    # Its 8 KB body rule only counts: batch writes are up to 1 MiB.
    assert managed["RuleActionOverrides"] == [
        {"Name": "SizeRestrictions_BODY", "ActionToUse": {"Count": {}}}]
    rate = rules["RatePerIp"]
    assert rate["Action"] == {"Block": {}}
    assert rate["Statement"]["RateBasedStatement"]["Limit"] == 500
    assert rate["Statement"]["RateBasedStatement"]["AggregateKeyType"] == "IP"
    _, association = _one(guarded, "AWS::WAFv2::WebACLAssociation")
    assert association["Properties"]["WebACLArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    stage_id, _ = _one(guarded, "AWS::ApiGateway::Stage")
    assert stage_id in str(association["Properties"]["ResourceArn"])


def test_custom_domain_pins_tls_1_2_and_maps_the_stage(guarded: Synth) -> None:
    domain_id, domain = _one(guarded, "AWS::ApiGateway::DomainName")
    props = domain["Properties"]
    assert props["DomainName"] == "memory.example.com"
    assert props["SecurityPolicy"] == "TLS_1_2"
    assert props["RegionalCertificateArn"].endswith(":certificate/abc")
    _, mapping = _one(guarded, "AWS::ApiGateway::BasePathMapping")
    assert mapping["Properties"]["DomainName"] == {"Ref": domain_id}
    _, authorizer = _one(guarded, "AWS::ApiGateway::Authorizer")
    assert authorizer["Properties"]["AuthorizerResultTtlInSeconds"] == 60
