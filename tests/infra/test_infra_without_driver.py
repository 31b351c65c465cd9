"""The CDK app synthesises without the runtime's heavy dependencies: the database driver, the
vector adapter, numpy and the embedder's libraries are made unimportable in a fresh
interpreter, and the whole stack still synthesises (the import contract in pyproject.toml
says the same statically; this proves it at run time)."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ("psycopg", "psycopg_binary", "pgvector", "numpy", "onnxruntime", "tokenizers")

SCRIPT = textwrap.dedent("""
    import importlib.abc, sys
    from pathlib import Path

    BLOCKED = {blocked!r}

    class Unavailable(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)")
            return None

    sys.meta_path.insert(0, Unavailable())
    sys.path.insert(0, {tests!r})
    from infra_synth import synthesize

    synth = synthesize(Path(sys.argv[1]), {{}})
    functions = synth.resources("AWS::Lambda::Function")
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(len(functions), loaded)
""")


def test_stack_synthesises_with_the_database_driver_and_numpy_unimportable(
    tmp_path: Path,
) -> None:
    script = SCRIPT.format(blocked=BLOCKED, tests=str(ROOT / "tests" / "infra"))
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    count, loaded = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(count) >= 5  # the four service functions and the migration one
    assert loaded == "[]"
