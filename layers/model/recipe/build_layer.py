"""Build the Lambda layer folder for one architecture, ready for CDK ``Code.from_asset``.

    python3 layers/model/recipe/build_layer.py --arch arm64 --models build/models \
        --providers e5-small-multilingual --out build/layer/arm64

Layout (the folder becomes ``/opt`` in Lambda)::

    python/                       on sys.path: haki, haki_aws and the pinned Linux wheels
    python/haki/db/migrations_sql the SQL migrations (the packaged migration runner reads them)
    haki/models/<provider>/       model.onnx, tokenizer.json, manifest.json
    haki/layer.json               what was built from what (fingerprint, sizes)

Wheels come from PyPI for the target CPython and manylinux platform without Docker, installed
from the hashed lock of the architecture (``layer-lock-<arch>.txt``, written by ``lock_layer.py``,
``make layer-lock``) with ``pip --require-hashes --no-deps``; a lock that no longer matches the
pins of ``pyproject.toml`` is refused. Every native library is checked to be an ELF object of
the target machine; ``.pyc`` files are precompiled (``/opt`` is read-only) as unchecked-hash
pycs, by an interpreter of the target Python version. A folder whose inputs did not change is
kept as it is.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RECIPE = Path(__file__).resolve().parent
LIMIT_BYTES = 250 * 1024 * 1024  # Lambda: layers + function, unzipped
#: ``uname -m`` names and ELF ``e_machine`` codes.
ARCHS = {"x86_64": ("x86_64", 62), "arm64": ("aarch64", 183)}
#: Provided by the Lambda Python runtime (botocore comes in through aws-xray-sdk): never locked.
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer")
#: Build-time tooling and tests that the wheels carry and the runtime never loads (~60 MB).
#: onnxruntime's Python binding links the runtime statically (RUNPATH $ORIGIN, no NEEDED
#: libonnxruntime): ``libonnxruntime.so`` is only there for C API users.
TRIM = (
    "onnxruntime/capi/libonnxruntime.so*",
    "onnxruntime/transformers",
    "onnxruntime/quantization",
    "onnxruntime/tools",
    "onnxruntime/datasets",
    "numpy/**/tests",
)
#: Distributions that must bring a native library (a pure-Python fallback means a wrong wheel).
NATIVE = ("numpy", "onnxruntime", "tokenizers", "pydantic_core", "psycopg_binary")
#: Locked without its dependencies (its huggingface_hub dependency is only for downloads).
NO_DEPS = ("tokenizers",)
#: A lock line: ``name==version --hash=sha256:<hex>``.
LOCK_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) --hash=sha256:([0-9a-f]{64})$")
#: A requirement of pyproject.toml: name, extras, the ``==`` version if pinned.
REQUIREMENT = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:==\s*([^\s;,]+))?"
)
MODEL_FILES = ("model.onnx", "tokenizer.json", "manifest.json")


def requirements(pyproject: Path) -> list[str]:
    """``[project] dependencies`` plus the ``lambda`` extra."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return list(project["dependencies"]) + list(project["optional-dependencies"]["lambda"])


def canonical(name: str) -> str:
    """PEP 503 normalized name (``typing_extensions`` and ``Typing.Extensions`` are one)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pin(requirement: str) -> tuple[str, str | None]:
    """(canonical name, ``==`` version or None) of a requirement string."""
    match = REQUIREMENT.match(requirement)
    if not match:
        raise SystemExit(f"cannot read the requirement {requirement!r}")
    return canonical(match[1]), match[2]


def platforms(machine: str) -> list[str]:
    """The manylinux tags to accept: with only manylinux2014 onnxruntime is not found, with only
    manylinux_2_28 pydantic_core resolves to a pure-Python placeholder."""
    tags = (f"manylinux_2_28_{machine}", f"manylinux_2_17_{machine}", f"manylinux2014_{machine}")
    return [arg for tag in tags for arg in ("--platform", tag)]


def lock_path(arch: str) -> Path:
    return RECIPE / f"layer-lock-{arch}.txt"


def read_lock(path: Path) -> dict:
    """``{"arch", "python", "pins": [...], "dists": {name: (version, sha256)}}`` of a lock file;
    the header's ``# arch:``, ``# python:`` and ``# pin:`` lines are its metadata."""
    lock: dict = {"arch": None, "python": None, "pins": [], "dists": {}}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("#"):
            key, _, value = line[1:].strip().partition(": ")
            if key == "pin":
                lock["pins"].append(value.strip())
            elif key in ("arch", "python"):
                lock[key] = value.strip()
            continue
        if not line:
            continue
        match = LOCK_LINE.match(line)
        if not match:
            raise SystemExit(f"{path}:{number}: not `name==version --hash=sha256:...`: {line}")
        lock["dists"][canonical(match[1])] = (match[2], match[3])
    return lock


def lock_problems(lock_file: Path, reqs: list[str], arch: str, python_version: str) -> list[str]:
    """Why the lock cannot stand for these requirements (empty when it can)."""
    if not lock_file.is_file():
        return [f"{lock_file} is missing"]
    lock = read_lock(lock_file)
    problems = []
    if lock["arch"] != arch or lock["python"] != python_version:
        problems.append(
            f"it is for {lock['arch']} / Python {lock['python']}, "
            f"not {arch} / Python {python_version}"
        )
    if sorted(lock["pins"]) != sorted(reqs):
        problems.append(f"it was made from the pins {lock['pins']}, pyproject.toml has {reqs}")
    for requirement in reqs:
        name, version = pin(requirement)
        locked = lock["dists"].get(name)
        if locked is None:
            problems.append(f"{name} is not in it")
        elif version is not None and locked[0] != version:
            problems.append(f"{name} is pinned =={version}, locked =={locked[0]}")
    for name in RUNTIME_PROVIDED:
        if name in lock["dists"]:
            problems.append(f"{name} is in it (the Lambda runtime provides it)")
    if not lock["dists"]:
        problems.append("it lists no distribution")
    return problems


def tree_digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for root in paths:
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            name = path.relative_to(root.parent).as_posix()
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def find_interpreter(version: str, explicit: str | None) -> str:
    """A Python of exactly ``version`` (pycs are version-specific)."""
    candidates = [explicit] if explicit else [sys.executable, f"python{version}"]
    if not explicit:
        pyenv = Path(os.path.expanduser("~/.pyenv/versions"))
        candidates += [str(p) for p in sorted(pyenv.glob(f"{version}.*/bin/python{version}"))]
    for candidate in candidates:
        exe = shutil.which(candidate) if candidate else None
        if not exe:
            continue
        probe = subprocess.run(
            [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return exe
    raise SystemExit(
        f"no Python {version} interpreter found to precompile .pyc files; "
        f"pass --compile-python /path/to/python{version}"
    )


def pip_args(target: Path, machine: str, version: str) -> list[str]:
    """``pip install`` for the target platform into ``target`` (the lock and the build share it)."""
    return [
        sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target),
        "--implementation", "cp", "--python-version", version, "--only-binary=:all:",
        *platforms(machine), "--disable-pip-version-check", "--root-user-action=ignore",
    ]


def pip_install(target: Path, lock_file: Path, machine: str, version: str) -> None:
    """Exactly the wheels of the lock: every one pinned and checked against its hash."""
    cmd = [
        *pip_args(target, machine, version), "--require-hashes", "--no-deps", "--no-compile",
        "--upgrade", "--no-warn-conflicts", "-r", str(lock_file),
    ]
    if subprocess.run(cmd, check=False).returncode != 0:
        raise SystemExit(
            f"pip could not install {lock_file} (its message is above): a wheel whose hash "
            "differs from the lock, or a lock whose wheels are not on the index"
        )


def trim(site: Path) -> None:
    for pattern in TRIM:
        for path in sorted(site.glob(pattern), reverse=True):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()


def check_elf(site: Path, e_machine: int) -> int:
    """Every ELF file is for the target machine; each NATIVE distribution has one."""
    count = 0
    seen: set[str] = set()
    for path in site.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        with path.open("rb") as fh:
            head = fh.read(20)
        if head[:4] != b"\x7fELF":
            continue
        machine = int.from_bytes(head[18:20], "little")
        if machine != e_machine:
            raise SystemExit(f"{path}: ELF machine {machine}, expected {e_machine}")
        count += 1
        seen.add(path.relative_to(site).parts[0])
    missing = [n for n in NATIVE if not any(s == n or s.startswith(n + ".") for s in seen)]
    if missing:
        raise SystemExit(f"no native library for {missing}: a pure-Python wheel was resolved")
    return count


def copy_models(models: Path, providers: list[str], target: Path) -> None:
    for provider in providers:
        source = models / provider
        manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
        dest = target / provider
        dest.mkdir(parents=True)
        for name in MODEL_FILES:
            shutil.copyfile(source / name, dest / name)
            expected = manifest["files"].get(name, {}).get("sha256")
            if expected and hashlib.sha256((dest / name).read_bytes()).hexdigest() != expected:
                raise SystemExit(f"{source / name} does not match its manifest; rebuild the model")


def folder_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def build(args: argparse.Namespace) -> None:
    machine, e_machine = ARCHS[args.arch]
    reqs = requirements(args.pyproject)
    lock_file = args.lock or lock_path(args.arch)
    problems = lock_problems(lock_file, reqs, args.arch, args.python_version)
    if problems:
        raise SystemExit(
            f"{lock_file} is out of date with {args.pyproject}: " + "; ".join(problems)
            + f". Run `make layer-lock` (python3 {RECIPE.relative_to(REPO)}/lock_layer.py)."
        )
    sources = [REPO / "layers/model/haki", REPO / "layers/model/haki_aws", REPO / "migrations"]
    manifests = [args.models / p / "manifest.json" for p in args.providers]
    for manifest in manifests:
        if not manifest.is_file():
            raise SystemExit(f"{manifest} missing: run `make model`")
    fingerprint = hashlib.sha256(
        json.dumps(
            {
                "arch": args.arch,
                "python": args.python_version,
                "requirements": reqs,
                "lock": tree_digest([lock_file]),
                "providers": args.providers,
                "sources": tree_digest([p for p in sources if p.exists()]),
                "models": tree_digest(manifests),
                "recipe": tree_digest([Path(__file__).resolve()]),
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()
    info_path = args.out / "haki" / "layer.json"
    if info_path.is_file() and json.loads(info_path.read_text())["fingerprint"] == fingerprint:
        info = json.loads(info_path.read_text())
        print(f"layer {args.out} up to date: {info['unzipped_bytes'] / 2**20:.1f} MiB unzipped")
        return

    compile_python = None if args.no_compile else find_interpreter(
        args.python_version, args.compile_python
    )
    staging = args.out.with_name(args.out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    site = staging / "python"
    site.mkdir(parents=True)
    try:
        pip_install(site, lock_file, machine, args.python_version)
        shutil.rmtree(site / "bin", ignore_errors=True)
        trim(site)
        native = check_elf(site, e_machine)
        wheels_bytes = folder_bytes(site)

        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for package in ("haki", "haki_aws"):
            if (REPO / "layers/model" / package).is_dir():
                shutil.copytree(REPO / "layers/model" / package, site / package, ignore=ignore)
        shutil.copytree(REPO / "migrations", site / "haki/db/migrations_sql",
                        ignore=shutil.ignore_patterns("*.md"))
        copy_models(args.models, args.providers, staging / "haki" / "models")
        models_bytes = folder_bytes(staging / "haki" / "models")

        if compile_python:
            subprocess.run(
                [compile_python, "-m", "compileall", "-q", "-j", "0",
                 "--invalidation-mode", "unchecked-hash",
                 "-s", str(site), "-p", "/opt/python", str(site)],
                check=True,
            )
        total = folder_bytes(staging)
        info = {
            "fingerprint": fingerprint,
            "arch": args.arch,
            "python": args.python_version,
            "providers": args.providers,
            "requirements": reqs,
            "lock": lock_file.name,
            "distributions": len(read_lock(lock_file)["dists"]),
            "native_libraries": native,
            "pyc_compiled_with": compile_python and Path(compile_python).name,
            "wheels_bytes": wheels_bytes,
            "models_bytes": models_bytes,
            "unzipped_bytes": total,
        }
        (staging / "haki" / "layer.json").write_text(json.dumps(info, indent=2) + "\n")
        if total > LIMIT_BYTES:
            raise SystemExit(f"layer is {total / 2**20:.1f} MiB unzipped, over the 250 MiB limit")
        shutil.rmtree(args.out, ignore_errors=True)
        staging.rename(args.out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(
        f"layer {args.out}: {total / 2**20:.1f} MiB unzipped (wheels {wheels_bytes / 2**20:.1f}, "
        f"models {models_bytes / 2**20:.1f}); {native} native libraries, all {machine}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=sorted(ARCHS), required=True)
    parser.add_argument("--models", type=Path, default=REPO / "build/models")
    parser.add_argument("--providers", nargs="+", default=["e5-small-multilingual"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--python-version", default="3.12", help="target CPython (Lambda: 3.12)")
    parser.add_argument("--compile-python", help="interpreter of that version for the .pyc")
    parser.add_argument("--no-compile", action="store_true", help="ship sources only")
    parser.add_argument("--pyproject", type=Path, default=REPO / "pyproject.toml")
    parser.add_argument("--lock", type=Path, help="hashed lock (default: layer-lock-<arch>.txt)")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.models = args.models.resolve()
    build(args)


if __name__ == "__main__":
    main()
