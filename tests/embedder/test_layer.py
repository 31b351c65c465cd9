"""Smoke test of the Lambda layer: build (or reuse) the x86_64 layer, then import it from a
clean interpreter that sees nothing but the layer, and embed a sentence.

The layer carries CPython 3.12 wheels. The test runs it with a Python 3.12 interpreter when
one is installed (this machine has one under pyenv), which checks the real artefact. Without
one, the same recipe builds a variant for the running interpreter (``--python-version``, from a
lock made for that version by ``lock_layer.py``) and that variant is imported instead: it proves
the recipe and the layout, not the cp312 wheels of the committed lock.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from haki.embedding import Embedder
from haki_local.environment import SOURCE_ROOT

RECIPE = SOURCE_ROOT / "layers/model/recipe/build_layer.py"
LOCKER = SOURCE_ROOT / "layers/model/recipe/lock_layer.py"
PROVIDER = "e5-small-multilingual"
SENTENCE = "The user's favourite city is Lisbon."

SMOKE = """
import json, sys
python_dir, models_dir, text = sys.argv[1:4]
assert not any("site-packages" in p for p in sys.path), sys.path
sys.path.insert(0, python_dir)
from haki.settings import Settings
from haki.embedding import get_embedder
import aws_lambda_powertools, numpy, onnxruntime, pydantic_core, tokenizers
import pgvector.psycopg, psycopg
import haki.embedding.embedder as module
embedder = get_embedder(Settings.from_env({"HAKI_MODEL_DIR": models_dir}))
vector = embedder.embed_query(text)
mods = (numpy, onnxruntime, tokenizers, pydantic_core, psycopg, module)
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "provider": embedder.provider,
    "vector": vector.tolist(),
    "files": [m.__file__ for m in mods],
    "psycopg_impl": psycopg.pq.__impl__,
    "cached": module.__cached__,
}))
"""


def _recipe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_layer", RECIPE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(out: Path, models_dir: Path, version: str, lock: Path | None = None) -> None:
    subprocess.run(
        [sys.executable, str(RECIPE), "--arch", "x86_64", "--models", str(models_dir),
         "--providers", PROVIDER, "--out", str(out), "--python-version", version,
         *(["--lock", str(lock)] if lock else [])],
        check=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def layer(models_dir: Path) -> tuple[Path, str]:
    """(layer folder, interpreter to run it with)."""
    recipe = _recipe()
    try:
        python = recipe.find_interpreter("3.12", None)
        out = SOURCE_ROOT / "build/layer/x86_64"
        _build(out, models_dir, "3.12")
    except SystemExit:
        version = "{}.{}".format(*sys.version_info[:2])
        python = sys.executable
        out = SOURCE_ROOT / f"build/layer-test/x86_64-py{version}"
        lock = out.with_name(out.name + "-lock.txt")
        lock.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(LOCKER), "--arch", "x86_64", "--python-version", version,
             "--out", str(lock)],
            check=True, timeout=300,
        )
        _build(out, models_dir, version, lock)
    return out, python


def test_layer_layout(layer: tuple[Path, str]) -> None:
    root, _ = layer
    info = json.loads((root / "haki/layer.json").read_text())
    assert info["arch"] == "x86_64"
    assert info["unzipped_bytes"] < 250 * 1024 * 1024
    assert info["native_libraries"] > 0
    for name in ("model.onnx", "tokenizer.json", "manifest.json"):
        assert (root / "haki/models" / PROVIDER / name).is_file()
    assert (root / "python/haki/embedding/embedder.py").is_file()
    assert (root / "python/haki/db/migrations_sql").is_dir()
    assert not (root / "python/botocore").exists()  # the Lambda runtime provides it


def test_clean_interpreter_embeds_from_the_layer(layer: tuple[Path, str], e5: Embedder) -> None:
    root, python = layer
    result = subprocess.run(
        [python, "-I", "-S", "-c", SMOKE, str(root / "python"), str(root / "haki/models"),
         SENTENCE],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    print(f"layer imported by Python {report['python']} ({python})")
    assert report["provider"] == PROVIDER
    assert report["psycopg_impl"] == "binary"
    for path in report["files"]:
        assert path.startswith(str(root / "python")), path
    # The .pyc came precompiled with the layer (Lambda's /opt is read-only).
    assert report["cached"].startswith(str(root / "python"))
    assert Path(report["cached"]).is_file()
    vector = np.array(report["vector"], dtype=np.float32)
    assert vector.shape == (384,)
    np.testing.assert_allclose(vector, e5.embed_query(SENTENCE), atol=1e-5)
