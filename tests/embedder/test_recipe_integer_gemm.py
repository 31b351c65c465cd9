"""The recipe's integer GEMM (``layers/model/recipe/graph.py``), checked with the build venv.

What must hold for the vectors to be the same on every x86 CPU: the weights are int8 within
[-64, 64], so a uint8 × int8 pair sums to at most 2·255·64 = 32,640 and never saturates the
int16 of the kernels without VNNI; every integer GEMM reads uint8 from a QuantizeLinear.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from haki_local.environment import SOURCE_ROOT

MODEL_PY = SOURCE_ROOT / "build" / "model-env" / "bin" / "python"
CHECKS = Path(__file__).with_name("recipe_checks.py")
INT16_MAX = 32767


@pytest.fixture(scope="module")
def findings(models_dir: Path) -> dict:
    if not MODEL_PY.is_file():
        pytest.fail("build venv missing; run `make model` first", pytrace=False)
    done = subprocess.run(
        [str(MODEL_PY), str(CHECKS), str(models_dir / "e5-small-multilingual")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_requantized_weights_stay_in_seven_bits_and_a_sign(findings: dict) -> None:
    int7 = findings["int7"]
    assert int7["dtype"] == "int8"
    assert int7["shape"] == [96, 48]  # [in, out], as MatMulIntegerToFloat reads B
    assert int7["max_abs_q"] == 64
    assert 2 * 255 * int7["max_abs_q"] <= INT16_MAX
    assert int7["worst_error_in_steps"] <= 0.5 + 1e-9
    assert int7["dead_row_finite"]
    assert int7["outlier_exact"]


def test_smoothing_balances_activation_and_weight_ranges(findings: dict) -> None:
    assert findings["smoothing"] == {"finite_positive": True, "balanced": True}


def test_the_built_default_model_runs_every_linear_as_unsaturated_integer_gemm(
    findings: dict,
) -> None:
    model = findings["model"]
    assert model["integer_gemms"] == 48  # 12 layers × (qkv, ao, fi, fo)
    assert model["matmulnbits"] == 0
    assert model["weights_int8"]
    assert 2 * 255 * model["max_abs_weight"] <= INT16_MAX
    assert model["inputs_from_quantize_linear"]
    assert model["output_finite_unit"]
