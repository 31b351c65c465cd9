"""Checks of the model recipe's integer GEMM, run by ``test_recipe_integer_gemm.py`` with the
build venv's Python (the recipe needs onnx and torch, which the runtime venv does not have).

    build/model-env/bin/python tests/embedder/recipe_checks.py MODEL_DIR

Prints one JSON object of findings; the test asserts on them.
"""

import json
import sys
from pathlib import Path

import numpy as np

RECIPE = Path(__file__).resolve().parents[2] / "layers" / "model" / "recipe"
sys.path.insert(0, str(RECIPE))

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from graph import _channels_int7, smoothing  # noqa: E402
from onnx import numpy_helper  # noqa: E402


def int7_findings() -> dict:
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((48, 96)) * rng.uniform(0.01, 3.0, size=(48, 1))
    weight[5] = 0.0  # a dead output channel
    weight[9, 3] = 40.0  # one outlier weight
    q, scales = _channels_int7(weight)
    rebuilt = q.T.astype(np.float64) * scales[:, None]
    return {
        "dtype": str(q.dtype),
        "shape": list(q.shape),
        "max_abs_q": int(np.abs(q).max()),
        "worst_error_in_steps": float((np.abs(rebuilt - weight) / scales[:, None]).max()),
        "dead_row_finite": bool(np.isfinite(scales[5]) and (q[:, 5] == 0).all()),
        "outlier_exact": bool(abs(rebuilt[9, 3] - 40.0) < 1e-9),
    }


def smoothing_findings() -> dict:
    activation = np.array([1.0, 4.0, 0.0, 33.0])
    weight = np.array([[1.0, 1.0, 2.0, 0.5], [-2.0, 0.5, 1.0, 0.25]])
    factors = smoothing(activation, weight)
    return {
        "finite_positive": bool(np.isfinite(factors).all() and (factors > 0).all()),
        # alpha = 0.5 equalises the two ranges: max|x|/f == max|W|·f per channel.
        "balanced": bool(
            np.allclose(
                np.maximum(activation, 1e-5) / factors, np.abs(weight).max(axis=0) * factors
            )
        ),
    }


def model_findings(model_dir: Path) -> dict:
    model = onnx.load(str(model_dir / "model.onnx"))
    inits = {t.name: t for t in model.graph.initializer}
    producers = {out: n for n in model.graph.node for out in n.output}
    gemms = [n for n in model.graph.node if n.op_type == "MatMulIntegerToFloat"]
    weights = [numpy_helper.to_array(inits[n.input[1]]) for n in gemms]
    session = ort.InferenceSession(
        str(model_dir / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    ids = np.array([[0, 2274, 12, 5, 2], [0, 2274, 12, 5, 2]], dtype=np.int64)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 1, 1]], dtype=np.int64)
    out = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    return {
        "integer_gemms": len(gemms),
        "matmulnbits": sum(n.op_type == "MatMulNBits" for n in model.graph.node),
        "weights_int8": all(w.dtype == np.int8 for w in weights),
        "max_abs_weight": int(max(np.abs(w).max() for w in weights)) if weights else None,
        "inputs_from_quantize_linear": all(
            producers[n.input[0]].op_type == "QuantizeLinear" for n in gemms
        ),
        "output_finite_unit": bool(
            np.isfinite(out).all() and np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
        ),
    }


if __name__ == "__main__":
    print(
        json.dumps(
            {
                "int7": int7_findings(),
                "smoothing": smoothing_findings(),
                "model": model_findings(Path(sys.argv[1])),
            }
        )
    )
