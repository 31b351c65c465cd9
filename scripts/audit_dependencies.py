"""Audit the pinned dependencies that ship (the core's, the Lambda edge's, the local
server's and the Python SDK's) against the public advisory database with ``pip-audit``,
then the Lambda layer's hashed lock (every distribution the layer installs, transitive ones
included, at its locked version: ``--no-deps``, nothing resolved or installed).

    .venv/bin/python scripts/audit_dependencies.py        # run by `make test`

Exit 1 when a known vulnerability affects a pinned version. When the advisory service does
not answer — no network, or a package index mirror without the vulnerability API, which
reports every package as "not found" — the audit is skipped with one printed line (exit 0):
an audit that checked nothing must not pass for one that found nothing.
"""

import json
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The extras whose packages are deployed or run by users (dev tools are not audited).
SHIPPED_EXTRAS = ("lambda", "local")


#: The Python SDK ships to agent builders too: its own pins are audited with the service's.
SDK_PYPROJECT = ROOT / "clients" / "python" / "pyproject.toml"


def shipped_requirements(pyproject: Path = ROOT / "pyproject.toml",
                         sdk: Path | None = SDK_PYPROJECT) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pins = [*project["dependencies"]]
    for extra in SHIPPED_EXTRAS:
        # An extra naming the project's own extras (``haki[lambda]``) adds no package.
        pins.extend(pin for pin in project["optional-dependencies"][extra]
                    if not pin.startswith(f"{project['name']}["))
    if sdk is not None and sdk.is_file():
        # The SDK's exact pins; a range is resolved by each user's environment, not shipped.
        pins.extend(pin for pin in tomllib.loads(sdk.read_text(encoding="utf-8"))["project"][
            "dependencies"] if "==" in pin)
    return sorted({pin.split("#", 1)[0].strip() for pin in pins})


def verdict(report: Mapping[str, Any]) -> tuple[int, str]:
    """(exit code, line to print) for a ``pip-audit --format json`` report."""
    dependencies = report.get("dependencies", [])
    audited = [d for d in dependencies if not d.get("skip_reason")]
    vulnerable = [d for d in audited if d.get("vulns")]
    if vulnerable:
        found = "; ".join(
            f"{d['name']} {d.get('version', '?')}: "
            + ", ".join(v.get("id", "?") + (f" (fixed in {', '.join(v['fix_versions'])})"
                                            if v.get("fix_versions") else "")
                        for v in d["vulns"])
            for d in vulnerable)
        return 1, f"dependency audit: known vulnerabilities: {found}"
    if not audited:
        return 0, (f"dependency audit skipped: the advisory service answered for none of "
                   f"{len(dependencies)} packages (offline, or an index without the "
                   "vulnerability API)")
    skipped = len(dependencies) - len(audited)
    return 0, (f"dependency audit: no known vulnerabilities in {len(audited)} packages"
               + (f" ({skipped} could not be checked)" if skipped else ""))


#: The layer's lock (layers/model/recipe/lock_layer.py): both architectures lock the same
#: versions, so one is audited.
LAYER_LOCK = ROOT / "layers" / "model" / "recipe" / "layer-lock-x86_64.txt"


def audit(requirements: Path, *extra: str) -> tuple[int, str]:
    """(exit code, line) of ``pip-audit -r requirements`` — a skip when the service does not
    answer."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip_audit", "-r", str(requirements), "--format", "json",
             "--progress-spinner", "off", *extra],
            capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return 0, "dependency audit skipped: the advisory service did not answer in 300 s"
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return 0, f"dependency audit skipped: pip-audit could not reach the service ({last[:200]})"
    return verdict(report)


def main() -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as requirements:
        requirements.write("\n".join(shipped_requirements()) + "\n")
        requirements.flush()
        results = [("pins", audit(Path(requirements.name)))]
    results.append(("layer lock", audit(LAYER_LOCK, "--no-deps", "--disable-pip")))
    for what, (_, line) in results:
        print(f"{what}: {line}")
    return max(code for _, (code, _) in results)


if __name__ == "__main__":
    sys.exit(main())
