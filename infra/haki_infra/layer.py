"""The shared layer (core package, embedder model, Linux wheels), built by ``make layer``.

One layer per architecture: onnxruntime, tokenizers, psycopg-binary and pydantic-core are
native wheels, so an arm64 layer cannot serve an x86_64 function.
"""

from pathlib import Path

from aws_cdk import RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from haki_infra.config import Arch

RUNTIME = lambda_.Runtime.PYTHON_3_12


def lambda_architecture(arch: Arch) -> lambda_.Architecture:
    return lambda_.Architecture.ARM_64 if arch is Arch.ARM64 else lambda_.Architecture.X86_64


class ModelLayer(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, layer_dir: Path, architecture: Arch
    ) -> None:
        super().__init__(scope, construct_id)
        if not (layer_dir / "python").is_dir():
            raise FileNotFoundError(
                f"{layer_dir} has no python/ folder: run `make layer ARCH={architecture.value}` "
                "or pass -c haki:layer_dir=<folder>"
            )
        self.architecture = architecture
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=lambda_.Code.from_asset(str(layer_dir)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_architecture(architecture)],
            description=f"haki core, embedder model and wheels ({architecture.value})",
            # Old versions stay until no function uses them (rollback keeps working).
            removal_policy=RemovalPolicy.RETAIN,
        )
