"""The Lambda layer ships what the handlers import, and nothing they never import.

The layer holds the core (``haki``) and the edge (``haki_aws``) whole, plus the wheels of its
lock file. Every module of the two packages must be reached from a handler
(``functions/*/app.py``), and every package a reached module imports must be the standard
library's, the Lambda runtime's own (boto3), or a distribution of the lock.
"""

import re
import sys
from importlib.metadata import packages_distributions

import grimp

from haki_local.environment import SOURCE_ROOT

LOCK = SOURCE_ROOT / "layers" / "model" / "recipe" / "layer-lock-x86_64.txt"
#: Shipped by the Lambda Python runtime, not by the layer.
RUNTIME = frozenset({"boto3", "botocore"})
SHIPPED = ("haki", "haki_aws")

GRAPH = grimp.build_graph("haki", "haki_aws", "functions", include_external_packages=True)


def _reached() -> set[str]:
    handlers = [m for m in GRAPH.modules if m.startswith("functions.") and m.endswith(".app")]
    assert len(handlers) >= 6
    reached, stack = set(handlers), list(handlers)
    while stack:
        for imported in GRAPH.find_modules_directly_imported_by(stack.pop()):
            if imported not in reached:
                reached.add(imported)
                stack.append(imported)
    return reached


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_module_of_the_layer_is_imported_by_a_handler() -> None:
    reached = _reached()
    modules = {m for m in GRAPH.modules
               if m.split(".")[0] in SHIPPED and not GRAPH.find_children(m)}
    assert modules, "no module of the core found"
    assert sorted(modules - reached) == []


def test_every_package_the_handlers_import_is_shipped() -> None:
    locked = {_canonical(line.split("==")[0])
              for line in LOCK.read_text(encoding="utf-8").splitlines()
              if "==" in line and not line.lstrip().startswith("#")}
    distributions = packages_distributions()
    internal = {*SHIPPED, "functions"}
    missing = []
    for top in sorted({m.split(".")[0] for m in _reached()} - internal):
        if top in sys.stdlib_module_names or top in RUNTIME:
            continue
        if not {_canonical(d) for d in distributions.get(top, [])} & locked:
            missing.append(top)
    assert missing == []
