// The SDK against the committed docs/openapi.json: the generated types must be what the
// document gives today, and the operation table must hold exactly the document's operations.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { OPERATIONS } from "../dist/esm/index.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const openapiPath = join(root, "..", "..", "docs", "openapi.json");
const openapi = JSON.parse(readFileSync(openapiPath, "utf8"));

test("src/schema.ts is what openapi-typescript generates from docs/openapi.json", () => {
  const dir = mkdtempSync(join(tmpdir(), "haki-schema-"));
  try {
    const out = join(dir, "schema.ts");
    const cli = join(root, "node_modules", "openapi-typescript", "bin", "cli.js");
    execFileSync(process.execPath, [cli, openapiPath, "--output", out], { stdio: "pipe" });
    const committed = readFileSync(join(root, "src", "schema.ts"), "utf8");
    assert.equal(committed, readFileSync(out, "utf8"),
      "docs/openapi.json changed: run `npm run generate` in clients/typescript and follow the SDK");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the operation table holds exactly the document's operations", () => {
  const documented = [];
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const [method, spec] of Object.entries(methods)) {
      const params = spec.parameters ?? [];
      documented.push({
        method: method.toUpperCase(), path,
        query: params.filter((p) => p.in === "query").map((p) => p.name).sort(),
        body: spec.requestBody !== undefined,
      });
    }
  }
  const ours = Object.values(OPERATIONS).map((op) => ({
    method: op.method, path: op.path, query: [...op.query].sort(), body: op.body,
  }));
  const key = (o) => `${o.method} ${o.path}`;
  assert.deepEqual(ours.sort((a, b) => key(a).localeCompare(key(b))),
                   documented.sort((a, b) => key(a).localeCompare(key(b))));
});
