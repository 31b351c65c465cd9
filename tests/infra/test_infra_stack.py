"""The production stack (defaults: RDS PostgreSQL 16, arm64) synthesized offline."""

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Match
from infra_synth import ROOT, Synth

from haki.settings import Settings
from haki_aws.routes import ROUTES
from haki_infra.stack import SERVICE_FUNCTIONS

FunctionSet = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def synth(synth_factory: Callable[[dict[str, Any]], Synth]) -> Synth:
    return synth_factory({})


def _service_functions(synth: Synth) -> FunctionSet:
    """The project's own functions (not CDK's helper functions), by logical id."""
    ids = {synth.logical_id(f.function) for f in synth.stack.functions.values()}
    ids.add(synth.logical_id(synth.stack.migrations.handler.function))
    return {k: v for k, v in synth.resources("AWS::Lambda::Function").items() if k in ids}


def _function(synth: Synth, key: str) -> tuple[str, dict[str, Any]]:
    logical_id = synth.logical_id(synth.stack.functions[key].function)
    return logical_id, synth.resources("AWS::Lambda::Function")[logical_id]


def _only(resources: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    assert len(resources) == 1, list(resources)
    return next(iter(resources.items()))


def test_cdk_nag_reports_no_unacknowledged_finding(synth: Synth) -> None:
    assert synth.violations == []


def test_functions_run_in_the_vpc_with_the_layer_of_their_architecture(synth: Synth) -> None:
    functions = _service_functions(synth)
    handlers = sorted(f["Properties"]["Handler"] for f in functions.values())
    # context, inspect, stats, ingest, memory, the authorizer, health and the migration
    # function.
    assert handlers == ["app.aggregate_handler"] + ["app.handler"] * 8
    layer_id, layer = _only(synth.resources("AWS::Lambda::LayerVersion"))
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    subnets = set(synth.resources("AWS::EC2::Subnet"))
    for name, function in functions.items():
        props = function["Properties"]
        assert props["Runtime"] == "python3.12", name
        assert props["Architectures"] == ["arm64"], name
        assert props["Layers"] == [{"Ref": layer_id}], name
        assert props["TracingConfig"] == {"Mode": "Active"}, name
        assert {s["Ref"] for s in props["VpcConfig"]["SubnetIds"]} == subnets, name
        assert props["ReservedConcurrentExecutions"] >= 1, name


def test_context_function_gets_a_full_vcpu(synth: Synth) -> None:
    _, context = _function(synth, "context")
    assert context["Properties"]["MemorySize"] == 1769


def test_the_writes_that_embed_get_a_full_vcpu_and_the_gateways_timeout(synth: Synth) -> None:
    _, ingest = _function(synth, "ingest")
    assert ingest["Properties"]["MemorySize"] == 1769
    # API Gateway gives up after 29 s; a write committing after that would surprise a retry.
    assert ingest["Properties"]["Timeout"] == 29
    _, memory = _function(synth, "memory")
    assert memory["Properties"]["MemorySize"] == 512
    assert memory["Properties"]["Timeout"] <= 29


def test_write_routes_are_served_by_their_functions(synth: Synth) -> None:
    """The route table's write routes, each by the function the module docstrings say (the
    generic check of the REST API against the table is below)."""
    by_route = {(r.method, r.path): r.function for r in ROUTES}
    assert {route: by_route[route] for route in [
        ("POST", "/v1/events"), ("POST", "/v1/facts"), ("GET", "/v1/facts"),
        ("POST", "/v1/facts/{fact_id}/status"), ("GET", "/v1/conflicts"),
        ("POST", "/v1/conflicts/{conflict_id}/resolve"), ("POST", "/v1/forget"),
    ]} == {
        ("POST", "/v1/events"): "ingest", ("POST", "/v1/facts"): "ingest",
        ("GET", "/v1/facts"): "memory", ("POST", "/v1/facts/{fact_id}/status"): "memory",
        ("GET", "/v1/conflicts"): "memory",
        ("POST", "/v1/conflicts/{conflict_id}/resolve"): "memory",
        ("POST", "/v1/forget"): "memory",
    }

    def deployed_code(key: str) -> str:
        """``app.py`` as staged for the function's code asset."""
        _, function = _function(synth, key)
        asset = function["Properties"]["Code"]["S3Key"].removesuffix(".zip")
        return (synth.outdir / f"asset.{asset}" / "app.py").read_text()

    # Every route's decorator is in the code its function deploys, and in no other's.
    for route in ROUTES:
        path = re.sub(r"\{(\w+)\}", r"<\1>", route.path)
        decorator = f'@app.{route.method.lower()}("{path}"'
        holders = {key for key in synth.stack.functions if decorator in deployed_code(key)}
        assert holders == {f.key for f in SERVICE_FUNCTIONS if f.folder == route.function}, route


def test_functions_reach_the_proxy_as_their_own_database_user(synth: Synth) -> None:
    proxy_id, _ = _only(synth.resources("AWS::RDS::DBProxy"))
    expected_users = {
        key: "haki_app" for key in ("context", "inspect", "stats", "ingest", "memory")}
    expected_users["aggregate"] = "haki_stats"
    for key, user in expected_users.items():
        _, function = _function(synth, key)
        env = function["Properties"]["Environment"]["Variables"]
        assert env["HAKI_DB_HOST"] == {"Fn::GetAtt": [proxy_id, "Endpoint"]}, key
        assert env["HAKI_DB_USER"] == user, key
        assert env["HAKI_DB_IAM_AUTH"] == "1", key
        assert env["HAKI_DB_PORT"] == "5432", key
        assert env["HAKI_DB_NAME"] == "haki", key
        # Every variable deployed is one the runtime's settings model reads.
        assert set(env) <= Settings.environment_variables(), key
        role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
        statements = [
            s
            for policy in synth.resources("AWS::IAM::Policy").values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
            if s["Action"] == "rds-db:connect"
        ]
        assert len(statements) == 1, key
        assert f"/{user}" in str(statements[0]["Resource"]), key
        assert "prx-" not in str(statements[0]["Resource"])  # the id comes from the proxy ARN


def test_proxy_requires_tls_and_iam_end_to_end(synth: Synth) -> None:
    _, proxy = _only(synth.resources("AWS::RDS::DBProxy"))
    props = proxy["Properties"]
    assert props["RequireTLS"] is True
    assert props["DefaultAuthScheme"] == "IAM_AUTH"
    # No secret registered: password logins through the proxy are impossible.
    assert "Auth" not in props
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    proxy_grants = [
        str(s["Resource"])
        for policy in synth.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "rds-db:connect"
    ]
    assert any("/haki_app" in g for g in proxy_grants)
    assert any("/haki_stats" in g for g in proxy_grants)
    assert all("DbiResourceId" in g for g in proxy_grants)


def test_database_is_private_encrypted_and_protected(synth: Synth) -> None:
    _, instance = _only(synth.resources("AWS::RDS::DBInstance"))
    props = instance["Properties"]
    assert props["Engine"] == "postgres"
    assert props["EngineVersion"].startswith("16.")
    assert props["PubliclyAccessible"] is False
    assert props["StorageEncrypted"] is True
    assert props["DeletionProtection"] is True
    assert props["MultiAZ"] is True
    assert props["BackupRetentionPeriod"] >= 7
    assert props["EnableIAMDatabaseAuthentication"] is True
    assert instance["DeletionPolicy"] == "Snapshot"
    synth.template.has_resource_properties(
        "AWS::RDS::DBParameterGroup", {"Parameters": {"rds.force_ssl": "1"}}
    )
    synth.template.resource_count_is("AWS::SecretsManager::RotationSchedule", 1)


def test_network_has_no_route_out_and_only_the_secrets_endpoint(synth: Synth) -> None:
    for resource_type in (
        "AWS::EC2::NatGateway",
        "AWS::EC2::InternetGateway",
        "AWS::EC2::Instance",
    ):
        synth.template.resource_count_is(resource_type, 0)
    _, endpoint = _only(synth.resources("AWS::EC2::VPCEndpoint"))
    assert str(endpoint["Properties"]["ServiceName"]).endswith(".secretsmanager']]}")
    assert endpoint["Properties"]["PrivateDnsEnabled"] is True
    synth.template.has_resource_properties("AWS::EC2::FlowLog", {"TrafficType": "REJECT"})


def _ingress_sources(synth: Synth, group_id: str) -> set[str]:
    return {
        rule["Properties"]["SourceSecurityGroupId"]["Fn::GetAtt"][0]
        for rule in synth.resources("AWS::EC2::SecurityGroupIngress").values()
        if rule["Properties"]["GroupId"]["Fn::GetAtt"][0] == group_id
    }


def test_security_groups_allow_functions_to_proxy_to_database_only(synth: Synth) -> None:
    groups = synth.resources("AWS::EC2::SecurityGroup")
    for name, group in groups.items():
        # No group is open to the world, and none has a catch-all egress.
        assert "CidrIp" not in str(group["Properties"].get("SecurityGroupIngress", [])), name
        egress = group["Properties"].get("SecurityGroupEgress", [])
        assert all(rule.get("CidrIp") != "0.0.0.0/0" for rule in egress), name

    def group_of(text: str) -> str:
        (found,) = [k for k, g in groups.items() if text in g["Properties"]["GroupDescription"]]
        return found

    database, proxy = group_of("PostgreSQL:"), group_of("RDS Proxy")
    functions, migration = group_of("Service functions"), group_of("Migration function")
    rotation = group_of("rotation")
    assert _ingress_sources(synth, proxy) == {functions}
    assert _ingress_sources(synth, database) == {proxy, migration, rotation}


def test_api_is_built_from_the_route_table(synth: Synth) -> None:
    path_of = synth.resource_paths().__getitem__

    public = {route.path for route in ROUTES if route.public}
    served = {}
    refused: dict[str, str] = {}
    for method in synth.resources("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        path = path_of(props["ResourceId"]["Ref"])
        if path.startswith("/console"):
            continue  # the console's page and files (test_infra_console.py)
        if path in public:  # the health checks: no key, no authorizer, no usage key
            assert props["AuthorizationType"] == "NONE"
            assert "AuthorizerId" not in props and not props.get("ApiKeyRequired")
        else:
            assert props["AuthorizationType"] == "CUSTOM"
            assert props["ApiKeyRequired"] is True
        if props["HttpMethod"] == "ANY":
            # Every other method of a routed path: 405 with Allow, from a mock (no function).
            assert props["Integration"]["Type"] == "MOCK"
            (response,) = props["Integration"]["IntegrationResponses"]
            assert response["StatusCode"] == "405"
            refused[path_of(props["ResourceId"]["Ref"])] = (
                response["ResponseParameters"]["method.response.header.Allow"])
            continue
        (function_id,) = [
            part["Fn::GetAtt"][0]
            for part in props["Integration"]["Uri"]["Fn::Join"][1]
            if "Fn::GetAtt" in part
        ]
        served[(props["HttpMethod"], path_of(props["ResourceId"]["Ref"]))] = function_id
        assert props["Integration"]["Type"] == "AWS_PROXY"
        if path not in public:
            assert props["RequestParameters"] == {"method.request.header.Authorization": True}
            assert "RequestValidatorId" in props
    expected = {
        (route.method, route.path): synth.logical_id(synth.stack.functions[route.function].function)
        for route in ROUTES
    }
    assert served == expected
    allowed: dict[str, list[str]] = {}
    for route in ROUTES:
        allowed.setdefault(route.path, []).append(route.method)
    assert refused == {path: f"'{', '.join(methods)}'" for path, methods in allowed.items()}


def test_the_health_checks_need_no_key_and_run_in_a_small_function_of_their_own(
        synth: Synth) -> None:
    assert {(r.method, r.path) for r in ROUTES if r.public} == {
        ("GET", "/v1/health"), ("GET", "/v1/health/ready")}
    assert {r.function for r in ROUTES if r.public} == {"health"}
    assert all(r.function != "health" for r in ROUTES if not r.public)
    _, health = _function(synth, "health")
    props = health["Properties"]
    assert props["ReservedConcurrentExecutions"] <= 2
    assert props["MemorySize"] <= 256
    # It reaches the database through the proxy as the runtime role, like the API functions.
    assert props["Environment"]["Variables"]["HAKI_DB_USER"] == "haki_app"


def test_api_throttles_per_stage_and_per_key(synth: Synth) -> None:
    _, stage = _only(synth.resources("AWS::ApiGateway::Stage"))
    props = stage["Properties"]
    (settings,) = props["MethodSettings"]
    assert settings["ThrottlingRateLimit"] == 100
    assert settings["ThrottlingBurstLimit"] == 200
    assert settings["LoggingLevel"] == "ERROR"
    assert props["TracingEnabled"] is True
    assert "$context.identity.apiKeyId" in props["AccessLogSetting"]["Format"]
    _, plan = _only(synth.resources("AWS::ApiGateway::UsagePlan"))
    assert plan["Properties"]["Throttle"] == {"BurstLimit": 40, "RateLimit": 20}
    assert plan["Properties"]["Quota"] == {"Limit": 200000, "Period": "DAY"}
    (stage_ref,) = plan["Properties"]["ApiStages"]
    assert stage_ref["Stage"] == {"Ref": _only(synth.resources("AWS::ApiGateway::Stage"))[0]}
    # No shared usage key: a project's own joins the plan when its first key is made.
    synth.template.resource_count_is("AWS::ApiGateway::ApiKey", 0)


def test_edge_errors_keep_the_error_contract(synth: Synth) -> None:
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in synth.resources("AWS::ApiGateway::GatewayResponse").values()
    }
    missing_header = responses["BAD_REQUEST_PARAMETERS"]
    assert missing_header["StatusCode"] == "401"
    assert '"code": "unauthorized"' in missing_header["ResponseTemplates"]["application/json"]
    assert responses["THROTTLED"]["StatusCode"] == "429"
    too_large = responses["REQUEST_TOO_LARGE"]
    assert too_large["StatusCode"] == "413"
    assert '"code": "payload_too_large"' in too_large["ResponseTemplates"]["application/json"]


def _rule(synth: Synth, description_start: str) -> dict[str, Any]:
    (rule,) = [r for r in synth.resources("AWS::Events::Rule").values()
               if r["Properties"]["Description"].startswith(description_start)]
    return rule


def test_schedule_runs_the_aggregation_handler(synth: Synth) -> None:
    assert len(synth.resources("AWS::Events::Rule")) == 2
    rule = _rule(synth, "Roll context calls up")
    assert rule["Properties"]["ScheduleExpression"] == "rate(5 minutes)"
    (target,) = rule["Properties"]["Targets"]
    aggregate_id, aggregate = _function(synth, "aggregate")
    assert target["Arn"] == {"Fn::GetAtt": [aggregate_id, "Arn"]}
    assert aggregate["Properties"]["Handler"] == "app.aggregate_handler"
    assert aggregate["Properties"]["ReservedConcurrentExecutions"] == 1


def test_the_scope_graph_task_runs_hourly_on_the_migration_function(synth: Synth) -> None:
    """The owner task (haki.db.scope_indexes) runs where the owner secret is readable: the
    migration function, with the secret's ARN in the event."""
    rule = _rule(synth, "Build and drop the big subjects")
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 hour)"
    (target,) = rule["Properties"]["Targets"]
    (migrate_id,) = [
        key for key, f in synth.resources("AWS::Lambda::Function").items()
        if f["Properties"].get("Description") == "Apply pending SQL migrations as the schema owner"]
    assert target["Arn"] == {"Fn::GetAtt": [migrate_id, "Arn"]}
    event = json.dumps(target["Input"])
    _, migration = _only(synth.resources("Custom::HakiMigrations"))
    # The same owner secret as the deploy's migration run.
    assert '\\"task\\":\\"scope_indexes\\"' in event
    assert json.dumps(migration["Properties"]["SecretArn"]) in event


def test_migrations_run_on_deploy_after_the_database_and_before_the_functions(
    synth: Synth,
) -> None:
    migration_id, migration = _only(synth.resources("Custom::HakiMigrations"))
    instance_id, _ = _only(synth.resources("AWS::RDS::DBInstance"))
    layer_id, _ = _only(synth.resources("AWS::Lambda::LayerVersion"))
    assert instance_id in migration["DependsOn"]
    props = migration["Properties"]
    assert props["LayerVersionArn"] == {"Ref": layer_id}
    assert props["DatabaseHost"] == {"Fn::GetAtt": [instance_id, "Endpoint.Address"]}
    handler_id = synth.logical_id(synth.stack.migrations.handler.function)
    handler = synth.resources("AWS::Lambda::Function")[handler_id]
    assert handler["Properties"]["Handler"] == "app.handler"
    # The provider framework invokes exactly that handler.
    on_event = {"USER_ON_EVENT_FUNCTION_ARN": Match.any_value()}
    framework = synth.template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Environment": {"Variables": on_event}}}
    )
    ((_, provider),) = framework.items()
    env = provider["Properties"]["Environment"]["Variables"]
    assert env["USER_ON_EVENT_FUNCTION_ARN"] == {"Fn::GetAtt": [handler_id, "Arn"]}
    for key in synth.stack.functions:
        _, function = _function(synth, key)
        assert migration_id in function.get("DependsOn", []), key


def test_alarms_cover_errors_latency_throttles_database_and_proxy(synth: Synth) -> None:
    alarms = list(synth.resources("AWS::CloudWatch::Alarm").values())
    metrics = {a["Properties"]["MetricName"] for a in alarms}
    assert {
        "5XXError",
        "Duration",
        "Errors",
        "Throttles",
        "CPUUtilization",
        "DatabaseConnections",
        "DatabaseConnectionsBorrowLatency",
        "ClientConnectionsSetupFailedAuth",
        "FreeStorageSpace",
        "FreeableMemory",
        "DefaultPartitionRows",
        "Invocations",
    } <= metrics
    (latency,) = [a for a in alarms if a["Properties"]["MetricName"] == "Duration"]
    assert latency["Properties"]["ExtendedStatistic"] == "p99"
    topic_id, _ = _only(synth.resources("AWS::SNS::Topic"))
    assert all(a["Properties"]["AlarmActions"] == [{"Ref": topic_id}] for a in alarms)
    per_function = [a for a in alarms if a["Properties"]["MetricName"] in ("Errors", "Throttles")]
    assert len(per_function) == 2 * len(synth.stack.functions)
    synth.template.resource_count_is("AWS::CloudWatch::Dashboard", 1)


def _alarm_on(synth: Synth, metric: str) -> dict[str, Any]:
    (alarm,) = [a["Properties"] for a in synth.resources("AWS::CloudWatch::Alarm").values()
                if a["Properties"]["MetricName"] == metric]
    return alarm


def test_the_database_alarms_fire_when_storage_or_memory_run_low(synth: Synth) -> None:
    instance_id, _ = _only(synth.resources("AWS::RDS::DBInstance"))
    for metric, floor in (("FreeStorageSpace", 2 * 1024**3), ("FreeableMemory", 128 * 1024**2)):
        alarm = _alarm_on(synth, metric)
        assert alarm["Namespace"] == "AWS/RDS"
        assert alarm["Dimensions"] == [
            {"Name": "DBInstanceIdentifier", "Value": {"Ref": instance_id}}]
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("LessThanThreshold", floor)
        assert alarm["Statistic"] == "Minimum"


def test_rows_in_the_default_partition_raise_an_alarm_on_the_metric_the_rollup_emits(
        synth: Synth) -> None:
    from haki_aws.observability import NAMESPACE, SERVICE

    alarm = _alarm_on(synth, "DefaultPartitionRows")
    assert alarm["Namespace"] == NAMESPACE
    assert alarm["Dimensions"] == [{"Name": "service", "Value": SERVICE}]
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


def test_a_stopped_aggregation_raises_an_alarm(synth: Synth) -> None:
    """No invocation of the rollup in three of its 5-minute intervals: no data is no run."""
    aggregate_id, _ = _function(synth, "aggregate")
    alarm = _alarm_on(synth, "Invocations")
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": aggregate_id}}]
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("LessThanThreshold", 1)
    assert alarm["Period"] == 15 * 60 and alarm["EvaluationPeriods"] == 1
    assert alarm["TreatMissingData"] == "breaching"


def test_the_docs_count_the_alarms_and_give_each_a_runbook_entry(synth: Synth) -> None:
    alarms = synth.resources("AWS::CloudWatch::Alarm")
    deploy = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert f"{len(alarms)} alarms" in deploy
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### `(<Function>\w+|\w+)`", operations, re.MULTILINE))
    ids = {spec.id for spec in synth.stack.monitoring.specs}
    assert len(ids) == len(alarms)
    named = {i for i in ids if not i.endswith(("Errors", "Throttles"))}
    # One entry per alarm; the per-function ones share two entries ("<Function>Errors").
    assert named | {"<Function>Errors", "<Function>Throttles"} == headings


def test_every_log_group_expires(synth: Synth) -> None:
    for name, group in synth.resources("AWS::Logs::LogGroup").items():
        assert group["Properties"]["RetentionInDays"] == 30, name


def _policy_statements(synth: Synth, function_id: str) -> list[dict[str, Any]]:
    """Every statement of the inline policies attached to a function's role."""
    role = synth.resources("AWS::Lambda::Function")[function_id]["Properties"]["Role"]
    role_id = role["Fn::GetAtt"][0]
    return [statement
            for policy in synth.resources("AWS::IAM::Policy").values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]]


def test_every_service_function_reads_the_log_salt_from_its_secret_never_its_environment(
        synth: Synth) -> None:
    salts = {k: v for k, v in synth.resources("AWS::SecretsManager::Secret").items()
             if "subject digest" in v["Properties"].get("Description", "")}
    [(secret_id, secret)] = salts.items()
    assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32
    for spec in SERVICE_FUNCTIONS:
        function_id, function = _function(synth, spec.key)
        variables = function["Properties"]["Environment"]["Variables"]
        # The ARN, not the value: no dynamic reference resolves the secret into the config.
        assert "HAKI_LOG_SALT" not in variables, spec.key
        assert variables["HAKI_LOG_SALT_SECRET_ARN"] == {"Ref": secret_id}, spec.key
        assert "resolve:secretsmanager" not in json.dumps(function), spec.key
        # Its role may read that one secret.
        reads = [s for s in _policy_statements(synth, function_id)
                 if "secretsmanager:GetSecretValue" in s["Action"]]
        assert [s["Resource"] for s in reads] == [{"Ref": secret_id}], spec.key
    # Nothing else in the template carries the salt's value.
    assert "resolve:secretsmanager:" + secret_id not in json.dumps(synth.template.to_json())


def test_functions_reach_the_secrets_endpoint(synth: Synth) -> None:
    groups = synth.resources("AWS::EC2::SecurityGroup")

    def group_of(text: str) -> str:
        (found,) = [k for k, g in groups.items() if text in g["Properties"]["GroupDescription"]]
        return found

    assert group_of("Service functions") in _ingress_sources(
        synth, group_of("Secrets Manager endpoint"))
