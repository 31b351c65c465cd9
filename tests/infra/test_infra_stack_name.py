"""The stack's name comes from ``haki:stack_name``: two deployments (staging, production) with
different names synthesise side by side in one app, and a name CloudFormation would refuse
fails the synth."""

import json
from pathlib import Path

import pytest
from aws_cdk import App
from infra_synth import CDK_CONTEXT

from haki_infra.config import HakiConfig
from haki_infra.stack import HakiStack, build_app

#: Properties naming something that must be unique in an account and region.
ACCOUNT_UNIQUE_NAMES = {
    "FunctionName", "RoleName", "TopicName", "LogGroupName", "DBInstanceIdentifier",
    "DBClusterIdentifier", "DBProxyName", "DBProxyEndpointName", "AliasName", "AlarmName",
    "DashboardName", "SecretName", "DBParameterGroupName", "DBSubnetGroupName", "Name"}


def _layer(tmp_path: Path) -> str:
    layer = tmp_path / "layer"
    (layer / "python" / "haki").mkdir(parents=True)
    (layer / "python" / "haki" / "__init__.py").write_text("# stand-in layer\n")
    return str(layer)


def test_the_default_name_is_haki_and_the_context_names_another(tmp_path: Path) -> None:
    context = {**CDK_CONTEXT, "haki:layer_dir": _layer(tmp_path)}
    _, default = build_app(context, outdir=str(tmp_path / "a"))
    assert default.stack_name == "Haki"
    _, staging = build_app({**context, "haki:stack_name": "Haki-staging"},
                           outdir=str(tmp_path / "b"))
    assert staging.stack_name == "Haki-staging"


def test_two_named_stacks_synthesise_side_by_side_in_one_app(tmp_path: Path) -> None:
    layer = _layer(tmp_path)
    outdir = tmp_path / "cdk.out"
    app = App(context=CDK_CONTEXT, outdir=str(outdir))
    stacks = [HakiStack(app, name, config=HakiConfig.from_mapping(
        {"stack_name": name, "layer_dir": layer, "dev": "true"}))
        for name in ("Haki-staging", "Haki-production")]
    app.synth()
    templates = [json.loads((outdir / f"{s.artifact_id}.template.json").read_text())
                 for s in stacks]
    names = [{r["Properties"]["Name"] for r in t["Resources"].values()
              if r["Type"] == "AWS::ApiGateway::RestApi"} for t in templates]
    assert names == [{"haki-staging"}, {"haki-production"}]
    plans = [{r["Properties"]["UsagePlanName"] for r in t["Resources"].values()
              if r["Type"] == "AWS::ApiGateway::UsagePlan"} for t in templates]
    assert plans == [{"haki-staging-default"}, {"haki-production-default"}]
    # No name that must be unique in an account and region is written into both templates.
    fixed = [{(r["Type"], key, value) for r in t["Resources"].values()
              for key, value in r.get("Properties", {}).items()
              if key in ACCOUNT_UNIQUE_NAMES and isinstance(value, str)} for t in templates]
    assert fixed[0] & fixed[1] == set()


@pytest.mark.parametrize("name", ["", "1haki", "haki_staging", "h" * 129])
def test_a_name_cloudformation_refuses_fails_the_synth(name: str) -> None:
    with pytest.raises(ValueError, match="stack_name"):
        HakiConfig.from_mapping({"stack_name": name})
