"""Synthesize the CDK app offline, the way ``cdk synth`` does, against a stand-in layer.

Each synthesis runs the AwsSolutions (cdk-nag) checks. When they find an unacknowledged
rule the synthesis raises after writing the template and the validation report, so the
findings are collected here and asserted by one test, while the template tests still run.
"""

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "infra"))

from aws_cdk import assertions  # noqa: E402

from haki_infra.stack import HakiStack, build_app  # noqa: E402

#: The deploy's context (feature flags) so tests synthesize what `cdk synth` would.
CDK_CONTEXT: dict[str, Any] = json.loads((ROOT / "infra" / "cdk.json").read_text())["context"]


@dataclass
class Synth:
    stack: HakiStack
    template: assertions.Template
    #: ``"<rule id> at <construct path>"`` for every unacknowledged cdk-nag finding.
    violations: list[str]
    #: The cloud assembly (staged assets included).
    outdir: Path

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return self.template.find_resources(resource_type)

    def resource_paths(self) -> dict[str, str]:
        """The path of each API Gateway resource, by logical id."""
        resources = self.resources("AWS::ApiGateway::Resource")

        def path_of(resource_id: str) -> str:
            props = resources[resource_id]["Properties"]
            parent = props["ParentId"]
            prefix = path_of(parent["Ref"]) if "Ref" in parent else ""
            return f"{prefix}/{props['PathPart']}"

        return {resource_id: path_of(resource_id) for resource_id in resources}

    def logical_id(self, construct: Any) -> str:
        """Logical id of an L2 construct's CloudFormation resource."""
        return self.stack.resolve(self.stack.get_logical_id(construct.node.default_child))


def synthesize(tmp: Path, overrides: dict[str, Any]) -> Synth:
    """Build and synthesize the app with ``overrides`` on top of cdk.json's context.

    The layer folder is a tiny stand-in per architecture (a real one is ~150 MB to hash).
    """
    layer_dir = tmp / "layer"
    (layer_dir / "python" / "haki").mkdir(parents=True, exist_ok=True)
    (layer_dir / "python" / "haki" / "__init__.py").write_text("# stand-in layer\n")
    outdir = tmp / "cdk.out"
    app, stack = build_app(
        {**CDK_CONTEXT, "haki:layer_dir": str(layer_dir), **overrides}, outdir=str(outdir)
    )
    try:
        app.synth()
    except RuntimeError as exc:
        if "ValidationFailed" not in str(exc):
            raise
    report = json.loads((outdir / "validation-report.json").read_text())
    violations = [
        f"{violation['ruleName']} at {construct['constructPath']}"
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        for construct in violation["violatingConstructs"]
    ]
    template = json.loads((outdir / f"{stack.artifact_id}.template.json").read_text())
    return Synth(stack, assertions.Template.from_json(template), violations, outdir)
