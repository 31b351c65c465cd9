"""Context flags: Aurora Serverless v2, dev mode, x86_64, the admin bastion and runtime
settings all synthesize, pass cdk-nag, and change what they say they change."""

from collections.abc import Callable
from typing import Any

import pytest
from infra_synth import Synth


@pytest.fixture(scope="module")
def aurora(synth_factory: Callable[[dict[str, Any]], Synth]) -> Synth:
    # Strings, as `cdk deploy -c key=value` passes them.
    return synth_factory(
        {
            "haki:engine": "aurora",
            "haki:dev": "true",
            "haki:architecture": "x86_64",
            "haki:aggregation_rate_minutes": "15",
            "haki:runtime_env": '{"HAKI_RECALL_MAX_DISTANCE": "0.35"}',
            "haki:sizing": '{"context": {"memory_mb": 2048}}',
        }
    )


@pytest.fixture(scope="module")
def rds_dev(synth_factory: Callable[[dict[str, Any]], Synth]) -> Synth:
    return synth_factory({"haki:dev": True, "haki:bastion": True,
                          "haki:scope_index_rate_minutes": "0"})


def test_both_variants_pass_cdk_nag(aurora: Synth, rds_dev: Synth) -> None:
    assert aurora.violations == []
    assert rds_dev.violations == []


def test_aurora_serverless_v2_is_private_encrypted_and_behind_the_proxy(aurora: Synth) -> None:
    aurora.template.resource_count_is("AWS::RDS::DBInstance", 1)  # the writer, dev: no reader
    ((cluster_id, cluster),) = aurora.resources("AWS::RDS::DBCluster").items()
    props = cluster["Properties"]
    assert props["Engine"] == "aurora-postgresql"
    assert props["EngineVersion"].startswith("16.")
    assert props["StorageEncrypted"] is True
    assert props["EnableIAMDatabaseAuthentication"] is True
    assert props["ServerlessV2ScalingConfiguration"] == {"MinCapacity": 0.5, "MaxCapacity": 4}
    (instance,) = aurora.resources("AWS::RDS::DBInstance").values()
    assert instance["Properties"]["DBInstanceClass"] == "db.serverless"
    assert instance["Properties"]["PubliclyAccessible"] is False
    (target_group,) = aurora.resources("AWS::RDS::DBProxyTargetGroup").values()
    assert target_group["Properties"]["DBClusterIdentifiers"] == [{"Ref": cluster_id}]
    (migration,) = aurora.resources("Custom::HakiMigrations").values()
    assert cluster_id in migration["DependsOn"]


def test_dev_mode_lets_the_stack_be_torn_down(aurora: Synth, rds_dev: Synth) -> None:
    (cluster,) = aurora.resources("AWS::RDS::DBCluster").values()
    assert cluster["Properties"]["DeletionProtection"] is False
    assert cluster["DeletionPolicy"] == "Delete"
    (instance,) = rds_dev.resources("AWS::RDS::DBInstance").values()
    assert instance["Properties"]["DeletionProtection"] is False
    assert instance["Properties"]["MultiAZ"] is False
    assert instance["DeletionPolicy"] == "Delete"


def test_x86_64_functions_get_the_x86_64_layer(aurora: Synth) -> None:
    ((layer_id, layer),) = aurora.resources("AWS::Lambda::LayerVersion").items()
    assert layer["Properties"]["CompatibleArchitectures"] == ["x86_64"]
    functions = [h.function for h in aurora.stack.functions.values()]
    functions.append(aurora.stack.migrations.handler.function)
    for function in functions:
        props = aurora.resources("AWS::Lambda::Function")[aurora.logical_id(function)]["Properties"]
        assert props["Architectures"] == ["x86_64"]
        assert props["Layers"] == [{"Ref": layer_id}]


def test_context_values_reach_functions_and_schedule(aurora: Synth) -> None:
    functions = aurora.resources("AWS::Lambda::Function")
    context = functions[aurora.logical_id(aurora.stack.functions["context"].function)]
    assert context["Properties"]["MemorySize"] == 2048
    for key, handler in aurora.stack.functions.items():
        env = functions[aurora.logical_id(handler.function)]["Properties"]["Environment"]
        assert env["Variables"]["HAKI_RECALL_MAX_DISTANCE"] == "0.35", key
    (rule,) = [r for r in aurora.resources("AWS::Events::Rule").values()
               if r["Properties"]["Description"].startswith("Roll context calls up")]
    assert rule["Properties"]["ScheduleExpression"] == "rate(15 minutes)"


def test_bastion_reaches_the_database_through_ssm_only(rds_dev: Synth) -> None:
    (instance,) = rds_dev.resources("AWS::EC2::Instance").values()
    props = instance["Properties"]
    assert props["SubnetId"]["Ref"] in rds_dev.resources("AWS::EC2::Subnet")
    assert "AssociatePublicIpAddress" not in str(props)
    services = {_service(e) for e in rds_dev.resources("AWS::EC2::VPCEndpoint").values()}
    assert services == {"ssm", "ssmmessages", "ec2messages", "secretsmanager"}
    (bastion_group,) = props["SecurityGroupIds"]
    database_group = next(
        k
        for k, g in rds_dev.resources("AWS::EC2::SecurityGroup").items()
        if g["Properties"]["GroupDescription"].startswith("PostgreSQL:")
    )
    sources = {
        r["Properties"]["SourceSecurityGroupId"]["Fn::GetAtt"][0]
        for r in rds_dev.resources("AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"]["Fn::GetAtt"][0] == database_group
    }
    assert bastion_group["Fn::GetAtt"][0] in sources


def _service(endpoint: dict[str, Any]) -> str:
    """``com.amazonaws.<region>.<service>`` → ``<service>``."""
    parts = endpoint["Properties"]["ServiceName"]["Fn::Join"][1]
    return "".join(p for p in parts if isinstance(p, str)).rsplit(".", 1)[-1]


def test_the_scope_graph_task_can_be_left_unscheduled(aurora: Synth, rds_dev: Synth) -> None:
    """0 minutes: no rule for it (``haki scope-indexes`` by hand); the default: hourly."""
    def schedules(synth: Synth) -> list[str]:
        return sorted(r["Properties"]["ScheduleExpression"]
                      for r in synth.resources("AWS::Events::Rule").values())
    assert schedules(rds_dev) == ["rate(5 minutes)"]
    assert schedules(aurora) == ["rate(1 hour)", "rate(15 minutes)"]


def test_aurora_watches_each_instances_local_storage_and_the_rollup_at_its_own_rate(
        aurora: Synth) -> None:
    alarms = {a["Properties"]["MetricName"]: a["Properties"]
              for a in aurora.resources("AWS::CloudWatch::Alarm").values()}
    # The cluster volume grows by itself; what can fill is an instance's local storage.
    assert "FreeStorageSpace" not in alarms
    assert alarms["FreeLocalStorage"]["ComparisonOperator"] == "LessThanThreshold"
    # Three missed runs of a 15-minute schedule.
    assert alarms["Invocations"]["Period"] == 45 * 60
