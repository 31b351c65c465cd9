"""The TypeScript SDK as a consumer installs it: ``npm pack`` (which builds it) of a copy of
its folder outside the checkout, the tarball installed offline into a scratch project, then
strict ``tsc`` over a consumer file (ES module) and a CommonJS one, a consumer with a misspelt
field that must not compile, and node loading the package both with ``import`` and with
``require()``."""

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.clients.test_typescript_sdk import PACKAGE, ensure_installed
from tests.tiers import ROOT

TSC = PACKAGE / "node_modules" / "typescript" / "bin" / "tsc"

#: Strict, as a careful consumer compiles; the package's own .d.ts files are checked too.
TSCONFIG = {"compilerOptions": {
    "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
    "lib": ["ES2022", "DOM"], "strict": True, "noEmit": True, "skipLibCheck": False,
    "noUncheckedIndexedAccess": True, "types": []}}

CONSUMER_ESM = """
import { DEFAULT_PURPOSE, HakiClient, HakiError, render } from "haki-client";
import type { ContextResult, FactIn, PacketFact } from "haki-client";

export async function recall(haki: HakiClient, who: string): Promise<string> {
  const answer: ContextResult = await haki.context({ subject_id: who, query: "language?",
                                                     budget_tokens: 400, render: true });
  const first: PacketFact | undefined = answer.packet.facts[0];
  const fact: FactIn = { subject_id: who, predicate: "preferred_language", value: "fr" };
  await haki.recordFact(fact);
  return `${render(answer)} ${first?.predicate ?? ""} ${answer.packet.status} ${DEFAULT_PURPOSE}`;
}

export function codeOf(error: unknown): string | null {
  return error instanceof HakiError ? error.code : null;
}

new HakiClient({ url: "http://127.0.0.1:1", apiKey: "hk_x", projectId: "p", timeoutMs: 500 });
"""

CONSUMER_CJS = """
import haki = require("haki-client");

const client: haki.HakiClient = new haki.HakiClient({ apiKey: "hk_x", projectId: "p" });
export const url: string = client.url;
export const purpose: string = haki.DEFAULT_PURPOSE;
"""

#: One misspelt request field, one misspelt response field.
CONSUMER_TYPO = """
import { HakiClient } from "haki-client";

export async function recall(haki: HakiClient): Promise<number> {
  const answer = await haki.context({ subject_id: "user-marie", qeury: "language?" });
  return answer.packet.fatcs.length;
}
"""

PROBE_ESM = """
import { DEFAULT_PURPOSE, HakiClient, HakiError } from "haki-client";
const client = new HakiClient({ apiKey: "hk_x", projectId: "p" });
console.log(JSON.stringify({ client: client.url, purpose: DEFAULT_PURPOSE,
                             error: new HakiError("x", "y", 404, null).code }));
"""
PROBE_CJS = PROBE_ESM.replace(
    'import { DEFAULT_PURPOSE, HakiClient, HakiError } from "haki-client";',
    'const { DEFAULT_PURPOSE, HakiClient, HakiError } = require("haki-client");')


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``npm pack`` (its ``prepack`` builds ``dist/``) of a copy of the SDK's folder outside
    the repository, as a maintainer publishing it from anywhere would."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("Node.js 20+ and npm are needed for the TypeScript SDK's tests")
    ensure_installed()
    copy = tmp_path_factory.mktemp("ts-sdk") / "typescript"
    shutil.copytree(PACKAGE, copy, symlinks=True, ignore=shutil.ignore_patterns("dist"))
    packed = tmp_path_factory.mktemp("ts-pack")
    done = run("npm", "pack", "--json", "--pack-destination", packed, cwd=copy)
    assert done.returncode == 0, done.stdout + done.stderr
    return packed / json.loads(done.stdout[done.stdout.index("["):])[0]["filename"]


@pytest.fixture(scope="module")
def consumer(tarball: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch project with the packed SDK installed from its tarball, offline."""
    project = tmp_path_factory.mktemp("ts-consumer")
    (project / "package.json").write_text(json.dumps(
        {"name": "consumer", "version": "1.0.0", "private": True, "type": "module"}))
    done = run("npm", "install", "--offline", "--no-audit", "--no-fund", tarball, cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    return project


def test_the_tarball_is_self_contained_and_licensed(consumer: Path):
    installed = consumer / "node_modules" / "haki-client"
    manifest = json.loads((installed / "package.json").read_text())
    assert manifest["license"] == "Apache-2.0" and "private" not in manifest
    assert manifest["repository"]["directory"] == "clients/typescript"
    assert (installed / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    # dist/ ships built: nothing runs when a consumer installs it (npm warns of such scripts).
    assert not set(manifest.get("scripts", {})) & {
        "preinstall", "install", "postinstall", "prepare"}
    # Every relative import of a shipped declaration file resolves inside the package.
    for declaration in (installed / "dist").rglob("*.d.ts"):
        for line in declaration.read_text().splitlines():
            if " from \"./" in line:
                target = line.split(" from \"")[1].split("\"")[0]
                assert (declaration.parent / target.replace(".js", ".d.ts")).is_file(), (
                    declaration, target)


def test_strict_tsc_compiles_a_consumer_in_both_module_systems(consumer: Path):
    (consumer / "tsconfig.json").write_text(json.dumps(
        {**TSCONFIG, "files": ["consumer.ts", "consumer.cts"]}))
    (consumer / "consumer.ts").write_text(CONSUMER_ESM)
    (consumer / "consumer.cts").write_text(CONSUMER_CJS)
    done = run("node", TSC, "-p", "tsconfig.json", cwd=consumer)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_misspelt_field_does_not_compile(consumer: Path):
    (consumer / "tsconfig.typo.json").write_text(json.dumps({**TSCONFIG, "files": ["typo.ts"]}))
    (consumer / "typo.ts").write_text(CONSUMER_TYPO)
    done = run("node", TSC, "-p", "tsconfig.typo.json", cwd=consumer)
    assert done.returncode != 0
    errors = [line for line in done.stdout.splitlines() if "error TS" in line]
    assert len(errors) == 2, done.stdout
    assert "'qeury'" in errors[0] and "'fatcs'" in errors[1]
    assert "Did you mean 'facts'?" in errors[1]


@pytest.mark.parametrize("probe", ["probe.mjs", "probe.cjs"])
def test_node_loads_it_with_import_and_require(consumer: Path, probe: str):
    (consumer / probe).write_text(PROBE_ESM if probe.endswith(".mjs") else PROBE_CJS)
    done = run("node", probe, cwd=consumer)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"client": "http://127.0.0.1:8787",
                                       "purpose": "agent_context", "error": "x"}


def test_the_tarball_holds_both_builds(tarball: Path):
    with tarfile.open(tarball) as packed:
        names = set(packed.getnames())
    for build in ("esm", "cjs"):
        assert {f"package/dist/{build}/index.js", f"package/dist/{build}/index.d.ts",
                f"package/dist/{build}/schema.d.ts"} <= names
    assert "package/dist/cjs/package.json" in names
    assert not any("node_modules" in name for name in names)


def test_the_packages_license_is_the_repositorys():
    """The package folder ships its own copy (``npm pack`` works from a copy of the folder)."""
    assert (PACKAGE / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
