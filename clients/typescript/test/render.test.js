// render() gives exactly the service's render_packet string. The expected strings come from
// the service's Python (tests/clients/test_typescript_sdk.py writes them to
// HAKI_RENDER_FIXTURES); the number and date formats are also checked against fixed Python
// outputs here.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { fixed2, parseJson, pythonDumps, pythonFloat, pythonIsoformat, render } from "../dist/index.js";

const fixtures = process.env.HAKI_RENDER_FIXTURES;

test("render equals the service's render_packet on hostile packets", { skip: !fixtures && "HAKI_RENDER_FIXTURES not set (run through pytest)" }, () => {
  const cases = JSON.parse(readFileSync(fixtures, "utf8"));
  assert.ok(cases.length >= 100);
  let rendered = 0;
  for (const { packet, expected } of cases) {
    assert.equal(render(parseJson(packet)), expected, packet);
    if (expected) rendered += 1;
  }
  assert.ok(rendered >= 100);
});

test("floats are written as Python's repr", () => {
  const python = {
    "1.0": "1.0", "-0.0": "-0.0", "0.5": "0.5", "1e16": "1e+16", "1.5e16": "1.5e+16",
    "1e15": "1000000000000000.0", "0.0001": "0.0001", "0.00001": "1e-05", "1e-7": "1e-07",
    "0.30000000000000004": "0.30000000000000004", "1e300": "1e+300", "5e-324": "5e-324",
    "1.7976931348623157e308": "1.7976931348623157e+308", "123456789.0": "123456789.0",
    "1e21": "1e+21", "1E5": "100000.0", "2E+3": "2000.0", "0.50": "0.5", "-1.25e-10": "-1.25e-10",
  };
  for (const [lexeme, repr] of Object.entries(python)) {
    assert.equal(pythonFloat(Number(lexeme)), repr, lexeme);
  }
  assert.equal(pythonDumps(null, "[1, -0, 1.0, 123456789012345678901234567890, 1e400]"),
    "[1, 0, 1.0, 123456789012345678901234567890, Infinity]");
  assert.equal(pythonDumps(null, '{"b": 1, "\\ue000": 2, "😀": 3, "a": {"z": [], "y": {}}}'),
    '{"a": {"y": {}, "z": []}, "b": 1, "\ue000": 2, "😀": 3}');
});

test("confidence is formatted as Python's :.2f (half to even on exact ties)", () => {
  const python = [[0.125, "0.12"], [0.375, "0.38"], [0.625, "0.62"], [0.875, "0.88"],
    [-0.125, "-0.12"], [0.005, "0.01"], [0.015, "0.01"], [0.985, "0.98"], [0.995, "0.99"],
    [1, "1.00"], [0, "0.00"], [-0, "-0.00"], [2.5, "2.50"], [1 / 3, "0.33"], [0.955, "0.95"]];
  for (const [x, expected] of python) assert.equal(fixed2(x), expected, String(x));
});

test("datetimes are written as Python's isoformat", () => {
  const python = {
    "2026-11-27T09:14:00Z": "2026-11-27T09:14:00+00:00",
    "2026-11-27T09:14:00.5Z": "2026-11-27T09:14:00.500000+00:00",
    "2026-11-27T09:14:00.1234569Z": "2026-11-27T09:14:00.123456+00:00",
    "2026-11-27T09:14:00.000000Z": "2026-11-27T09:14:00+00:00",
    "2026-11-27T09:14:00-00:00": "2026-11-27T09:14:00+00:00",
    "2026-11-27T09:14:00+0200": "2026-11-27T09:14:00+02:00",
    "2026-11-27t09:14:00z": "2026-11-27T09:14:00+00:00",
    "2026-11-27 09:14:00,5Z": "2026-11-27T09:14:00.500000+00:00",
    "2026-11-27T09:14Z": "2026-11-27T09:14:00+00:00",
    "2026-11-27T09:14:00": "2026-11-27T09:14:00",
    "2026-11-27": "2026-11-27T00:00:00",
  };
  for (const [text, iso] of Object.entries(python)) assert.equal(pythonIsoformat(text), iso, text);
});

test("parseJson reads what JSON.parse reads", () => {
  const texts = ['{"a": [1, 2.5, "x\\n\\u2028", null, true], "b": {"value": 1.0}}',
    '{"__proto__": 1, "a": "\\ud83d\\ude00"}', "[]", '"s"', "-0", '{"a":1,"a":2}'];
  for (const text of texts) assert.deepEqual(parseJson(text), JSON.parse(text), text);
  assert.throws(() => parseJson("{"), SyntaxError);
  assert.throws(() => parseJson("[1,]"), SyntaxError);
  assert.throws(() => parseJson("1 2"), SyntaxError);
});
