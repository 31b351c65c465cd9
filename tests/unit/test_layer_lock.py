"""The hashed locks the Lambda layer is installed from (``layers/model/recipe/layer-lock-*.txt``,
``make layer-lock``): every distribution pinned with the sha256 of one wheel of its platform,
every pin of ``pyproject.toml`` locked at its version, and a lock that no longer matches the pins
refused by the build. Offline: the files are read, nothing is resolved."""

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "layers/model/recipe"
_spec = importlib.util.spec_from_file_location("build_layer", RECIPE / "build_layer.py")
assert _spec is not None and _spec.loader is not None
layer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layer)

ARCHS = {"x86_64": "x86_64", "arm64": "aarch64"}
RUNTIME_PROVIDED = {"boto3", "botocore", "s3transfer"}
LINE = re.compile(r"^([a-z0-9][a-z0-9.-]*)==(\S+) --hash=sha256:([0-9a-f]{64})$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _entries(arch: str) -> list[tuple[str, str, str, str]]:
    """(name, version, sha256, wheel file named by the comment above) of each lock line."""
    entries, wheel = [], ""
    for raw in (RECIPE / f"layer-lock-{arch}.txt").read_text(encoding="utf-8").splitlines():
        if raw.startswith("# ") and raw.endswith(".whl"):
            wheel = raw[2:]
        elif raw and not raw.startswith("#"):
            match = LINE.match(raw)
            assert match, f"{arch}: not `name==version --hash=sha256:<64 hex>`: {raw!r}"
            entries.append((match[1], match[2], match[3], wheel))
            wheel = ""
    return entries


def _pins() -> dict[str, str]:
    """{name: version} of [project] dependencies + the lambda extra, from pyproject itself."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["lambda"]]:
        name, _, version = requirement.partition("==")
        assert version, f"{requirement} is not pinned"
        pins[_norm(name.split("[")[0].strip())] = version.split(";")[0].strip()
    return {n: v for n, v in pins.items() if n not in RUNTIME_PROVIDED}


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_lock_line_is_a_pin_with_a_sha256(arch: str) -> None:
    entries = _entries(arch)
    names = [name for name, *_ in entries]
    assert len(entries) >= len(_pins()), entries
    assert len(names) == len(set(names)), "a distribution is locked twice"
    # The build's reader sees the same distributions, versions and hashes.
    parsed = layer.read_lock(RECIPE / f"layer-lock-{arch}.txt")
    assert parsed["dists"] == {n: (v, h) for n, v, h, _ in entries}
    assert parsed["arch"] == arch and parsed["python"] == "3.12"


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_pyproject_pin_is_locked_at_its_version(arch: str) -> None:
    locked = {name: version for name, version, *_ in _entries(arch)}
    for name, version in _pins().items():
        assert locked.get(name) == version, f"{arch}: {name}=={version}, locked {locked.get(name)}"
    assert not RUNTIME_PROVIDED & set(locked), "the Lambda runtime provides these"


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_each_hash_is_of_a_cp312_wheel_for_the_architecture(arch: str) -> None:
    for name, version, _, wheel in _entries(arch):
        assert wheel, f"{name}: no wheel file named above its line"
        parts = wheel[: -len(".whl")].split("-")
        assert _norm(parts[0]) == name and parts[1] == version, wheel
        python, abi, platform = parts[-3:]
        assert (python, abi) == ("cp312", "cp312") or abi == "abi3" or (abi, platform) == (
            "none", "any"), wheel
        if platform != "any":
            assert all(tag.endswith("_" + ARCHS[arch]) for tag in platform.split(".")), wheel
    # Native wheels differ by architecture: one lock per architecture, hashes of their own.
    x86 = {n: h for n, _, h, w in _entries("x86_64") if not w.endswith("-any.whl")}
    arm = {n: h for n, _, h, w in _entries("arm64") if not w.endswith("-any.whl")}
    assert set(layer.NATIVE) <= {n.replace("-", "_") for n in x86}
    assert x86.keys() == arm.keys() and all(x86[n] != arm[n] for n in x86)


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_the_committed_locks_match_pyproject(arch: str) -> None:
    reqs = layer.requirements(ROOT / "pyproject.toml")
    assert layer.lock_problems(layer.lock_path(arch), reqs, arch, "3.12") == []


def _pyproject(tmp_path: Path, old: str, new: str) -> Path:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "pyproject.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_a_changed_pin_makes_the_lock_out_of_date(tmp_path: Path) -> None:
    reqs = layer.requirements(_pyproject(tmp_path, '"numpy==2.4.6"', '"numpy==2.4.7"'))
    problems = layer.lock_problems(layer.lock_path("x86_64"), reqs, "x86_64", "3.12")
    assert "numpy is pinned ==2.4.7, locked ==2.4.6" in problems


def test_a_new_dependency_is_missing_from_the_lock(tmp_path: Path) -> None:
    pyproject = _pyproject(tmp_path, '"certifi==', '"Rich_Text==1.0", "certifi==')
    problems = layer.lock_problems(
        layer.lock_path("arm64"), layer.requirements(pyproject), "arm64", "3.12")
    assert "rich-text is not in it" in problems


def test_a_changed_extra_is_out_of_date_though_versions_match(tmp_path: Path) -> None:
    pyproject = _pyproject(tmp_path, "powertools[tracer]", "powertools[tracer,parser]")
    problems = layer.lock_problems(
        layer.lock_path("x86_64"), layer.requirements(pyproject), "x86_64", "3.12")
    assert len(problems) == 1 and problems[0].startswith("it was made from the pins")


def test_the_other_architecture_or_python_lock_is_refused() -> None:
    reqs = layer.requirements(ROOT / "pyproject.toml")
    assert layer.lock_problems(layer.lock_path("arm64"), reqs, "x86_64", "3.12") == [
        "it is for arm64 / Python 3.12, not x86_64 / Python 3.12"]
    assert layer.lock_problems(layer.lock_path("x86_64"), reqs, "x86_64", "3.11") == [
        "it is for x86_64 / Python 3.12, not x86_64 / Python 3.11"]


def test_a_hand_edited_line_without_a_hash_is_refused(tmp_path: Path) -> None:
    lock = tmp_path / "lock.txt"
    text = layer.lock_path("x86_64").read_text(encoding="utf-8")
    lock.write_text(re.sub(r"(?m)^(six==\S+) --hash=sha256:\w+$", r"\1", text), encoding="utf-8")
    with pytest.raises(SystemExit, match=r"lock.txt:\d+: not `name==version --hash"):
        layer.read_lock(lock)


def test_the_build_stops_on_a_stale_lock_and_says_what_to_run(tmp_path: Path) -> None:
    pyproject = _pyproject(tmp_path, '"pydantic==2.14.4"', '"pydantic==2.14.5"')
    result = subprocess.run(
        [sys.executable, str(RECIPE / "build_layer.py"), "--arch", "x86_64", "--no-compile",
         "--pyproject", str(pyproject), "--out", str(tmp_path / "layer")],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode != 0
    assert "pydantic is pinned ==2.14.5, locked ==2.14.4" in result.stderr
    assert "make layer-lock" in result.stderr
    assert not (tmp_path / "layer").exists()
