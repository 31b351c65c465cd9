// The TypeScript SDK over real HTTP: against `haki serve` (HAKI_URL, HAKI_API_KEY,
// HAKI_PROJECT_ID, set by tests/clients/test_typescript_sdk.py) for the routes and the error
// codes, against a scripted node:http server for retries, timeouts and fail-open.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { describe, test } from "node:test";

import {
  APIConnectionError, APITimeoutError, AuthenticationError, BadRequestError, citedIds,
  ConfigurationError, ConflictError, DEFAULT_PURPOSE, HakiClient, HakiError, handles,
  NotFoundError, PermissionDeniedError, RateLimitError, render, resolveRefs, ServerError,
  UnexpectedResponseError, ValidationError,
} from "../dist/esm/index.js";

const live = process.env.HAKI_URL && process.env.HAKI_API_KEY;
const SUBJECT = "user-marie";
const QUERY = "Which language should we use when writing to Marie about her invoice?";
const HOSTILE_SUBJECT = process.env.HAKI_HOSTILE_SUBJECT ?? "user-hostile";
const HOSTILE_QUERY = process.env.HAKI_HOSTILE_QUERY ?? "invoice";
const silent = { warn() {} };

async function codeOf(promise) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof HakiError, String(error));
    return [error.code, error.status];
  }
  assert.fail("expected a HakiError");
}

describe("against haki serve", { skip: !live && "HAKI_URL / HAKI_API_KEY not set (run through pytest)" }, () => {
  const haki = () => new HakiClient(); // everything from the environment

  test("context, inspect and stats", async () => {
    const client = haki();
    const answer = await client.context({ subject_id: SUBJECT, query: QUERY, purpose: "support_reply", budget_tokens: 120, render: true });
    assert.equal(answer.served, true);
    assert.ok(answer.packet.facts.length > 0 && answer.token_count <= 120);
    assert.ok(answer.packet.facts.some((f) => f.predicate === "preferred_language"));
    assert.match(render(answer), /^<haki_memory>\n\[f1\] [^]*<\/haki_memory>$/);
    assert.equal(render(answer), answer.block);
    const plain = await client.context({ subject_id: SUBJECT, query: QUERY, purpose: "support_reply", budget_tokens: 120 });
    assert.equal("block" in plain, false);
    assert.throws(() => render(plain), /render: true/);
    const trace = await client.inspect(answer.trace_id, { subject_id: SUBJECT });
    assert.deepEqual(trace.packet, answer.packet);
    assert.ok(trace.decisions.some((d) => d.action === "blocked"));
    const stats = await client.statsOverview();
    assert.equal(stats.project_id, client.projectId);
    assert.equal(stats.events_this_week.length, 7);
    assert.equal((await client.statsOverview({ subject_id: SUBJECT })).subject_id, SUBJECT);
  });

  test("the health checks", async () => {
    assert.deepEqual(await haki().health(), { status: "ok" });
    assert.deepEqual(await haki().health({ ready: true }), { status: "ready" });
  });

  test("feedback: the cited handles as ids, listed by inspect; bad ids refused", async () => {
    const client = haki();
    const answer = await client.context({ subject_id: SUBJECT, query: QUERY, purpose: "support_reply", render: true });
    const used = citedIds("In English [f1], as she wrote [f1].", answer.packet);
    assert.deepEqual(used, [answer.packet.facts[0].id]);
    const stored = await client.feedback(answer.trace_id, { subject_id: SUBJECT, used, verdict: "helpful" });
    assert.deepEqual([stored.source, stored.used, stored.missing], ["agent", used, []]);
    const trace = await client.inspect(answer.trace_id, { subject_id: SUBJECT });
    assert.deepEqual(trace.feedback, [stored]);
    assert.deepEqual(await codeOf(client.feedback(answer.trace_id, { subject_id: SUBJECT, missing: ["3fdb9157-2449-4afe-a59b-5c5b0c621f5a"] })), ["invalid_feedback_ids", 422]);
    assert.deepEqual(await codeOf(client.feedback("3fdb9157-2449-4afe-a59b-5c5b0c621f5a", { subject_id: SUBJECT })), ["trace_not_found", 404]);
    const set = await client.evalSet({ since: new Date(trace.created_at) });
    const query = set.queries.find((q) => q.expected_fact_ids.includes(used[0]) && q.query === QUERY);
    assert.ok(query, "the call with feedback is a query of the eval set");
    assert.equal(query.category, "helpful");
  });

  test("errors carry the stable code", async () => {
    const client = haki();
    assert.deepEqual(await codeOf(client.context({ subject_id: SUBJECT, query: QUERY, budget_tokens: 0 })), ["validation_error", null]);
    assert.deepEqual(await codeOf(client.context({ subject_id: "", query: QUERY })), ["missing_scope", 422]);
    assert.deepEqual(await codeOf(client.context({ project_id: "atelier-voyage", subject_id: SUBJECT, query: QUERY })), ["forbidden_scope", 403]);
    assert.deepEqual(await codeOf(client.inspect("3fdb9157-2449-4afe-a59b-5c5b0c621f5a", { subject_id: SUBJECT })), ["trace_not_found", 404]);
    assert.deepEqual(await codeOf(client.inspect("not-a-uuid", { subject_id: SUBJECT })), ["trace_not_found", 404]);
    const bad = new HakiClient({ apiKey: `hk_${"A".repeat(43)}`, failOpen: true, logger: silent });
    assert.deepEqual(await codeOf(bad.context({ subject_id: SUBJECT, query: QUERY })), ["unauthorized", 401]);
  });

  test("writes: an event is served by the next context call; facts, conflicts, forget", async () => {
    const client = haki();
    const who = `ts-${Math.random().toString(16).slice(2, 12)}`;
    const text = "Je serai absente du 3 au 21 mars : écrivez à Julie Martin pour la facture.";
    const written = await client.rememberEvent({ subject_id: who, kind: "conversation.message", text, idempotency_key: `${who}-1` });
    assert.equal(written.deduplicated, false);
    const again = await client.rememberEvent({ subject_id: who, kind: "conversation.message", text, idempotency_key: `${who}-1` });
    assert.deepEqual([again.id, again.deduplicated], [written.id, true]);
    const answer = await client.context({ subject_id: who, query: "Qui contacter pour la facture pendant son absence ?", purpose: "support_reply", render: true });
    assert.deepEqual(answer.packet.episodes.map((e) => e.event_id), [written.id]);
    assert.match(render(answer), /Julie Martin/);

    // No purpose named: the default one, so a packet that hides nothing reads "ok".
    const plain = await client.context({ subject_id: who, query: "Qui contacter pour la facture ?" });
    assert.deepEqual([plain.packet.status, plain.packet.warnings], ["ok", []]);
    assert.equal((await client.inspect(plain.trace_id, { subject_id: who })).purpose, DEFAULT_PURPOSE);
    const bare = await client.context({ subject_id: who, query: "Qui contacter pour la facture ?", purpose: null });
    assert.equal(bare.packet.status, "degraded");
    assert.ok(bare.packet.warnings.some((w) => w.startsWith("missing_purpose")));

    const lyon = await client.recordFact({ subject_id: who, predicate: "lives_in", value: { city: "Lyon" }, confidence: 0.5 });
    assert.equal(lyon.outcome, "created");
    assert.equal((await client.recordFact({ subject_id: who, predicate: "lives_in", value: { city: "Lyon" } })).outcome, "reinforced");
    const paris = await client.recordFact({ subject_id: who, predicate: "lives_in", value: { city: "Paris" } });
    assert.equal(paris.outcome, "conflict");
    const open = await client.listConflicts({ subject_id: who, status: "open" });
    assert.deepEqual(open.conflicts.map((c) => c.id), [paris.conflict_id]);
    const resolved = await client.resolveConflict(paris.conflict_id, paris.id);
    assert.deepEqual(resolved.superseded_fact_ids, [lyon.id]);
    const page = await client.listFacts({ subject_id: who, status: "active", limit: 10 });
    assert.deepEqual(page.facts.map((f) => [f.id, f.value.city]), [[paris.id, "Paris"]]);
    assert.equal((await client.setFactStatus(paris.id, "disabled")).fact.status, "disabled");
    const erased = await client.forget({ mode: "delete", subject_id: who });
    assert.equal(erased.target, "subject");
    assert.deepEqual((await client.listFacts({ subject_id: who })).facts, []);
    assert.deepEqual(await codeOf(client.writeEvents([])), ["validation_error", 422]);
    assert.deepEqual(await codeOf(client.recordFact({ subject_id: "", predicate: "p", value: 1 })), ["missing_scope", 422]);
  });

  test("a conversation is written once per message and served with its speakers", async () => {
    const client = haki();
    const who = `ts-${Math.random().toString(16).slice(2, 12)}`;
    const said = "I just moved to Porto, please send my invoices there.";
    const turn = [
      { role: "user", name: "Ana", message_id: "m-1", content: said, occurred_at: "2026-11-20T10:07:41Z" },
      { role: "assistant", message_id: "m-2", content: "Noted: your invoices will go to your Porto address." },
    ];
    const written = await client.writeMessages(who, turn);
    const ids = written.events.map((e) => e.id);
    assert.equal(new Set(ids).size, 2);
    assert.ok(written.events.every((e) => !e.deduplicated));
    const again = await client.writeMessages(who, turn);
    assert.deepEqual(again.events.map((e) => [e.id, e.deduplicated]), ids.map((id) => [id, true]));
    const answer = await client.context({ subject_id: who, query: "Where should Ana's invoices be sent? Porto address", purpose: "support_reply", budget_tokens: 4000, render: true });
    assert.ok(answer.packet.episodes.some((e) => e.event_id === ids[0] && e.role === "user" && e.name === "Ana"));
    const lines = render(answer).split("\n");
    assert.equal(lines[lines.indexOf("## 2026-11-20") + 1], `[e1] Ana: ${said}`);
    assert.deepEqual(await codeOf(client.writeMessages(who, [{ role: "user", message_id: "m-1", content: "Other words." }])), ["idempotency_conflict", 409]);
    assert.deepEqual(await codeOf(client.writeMessages(who, [])), ["validation_error", 422]);
    assert.deepEqual(await codeOf(client.writeMessages("", turn)), ["missing_scope", 422]);
  });

  test("reads: a call is found and opened; the subject's events and a series", async () => {
    const client = haki();
    const who = `ts-${Math.random().toString(16).slice(2, 12)}`;
    const marker = `zebra${Math.random().toString(16).slice(2, 10)}`;
    const before = new Date(Date.now() - 60_000);
    const events = [];
    for (const n of [1, 2, 3]) {
      events.push(await client.rememberEvent({ subject_id: who, kind: "note", text: `Note ${n}: invoices go to Porto.` }));
    }
    const fact = await client.recordFact({ subject_id: who, predicate: "preferred_language", value: "pt" });
    const first = await client.context({ subject_id: who, query: `Which language for the ${marker} invoice?`, purpose: "ts_reads", render: true });
    const second = await client.context({ subject_id: who, query: `Where do the ${marker} invoices go?`, purpose: "other_purpose" });

    const found = await client.listCalls({ q: marker.toUpperCase() });
    assert.deepEqual(found.calls.map((c) => c.trace_id), [second.trace_id, first.trace_id]);
    assert.deepEqual([...new Set(found.calls.map((c) => c.subject_id))], [who]);
    const only = await client.listCalls({ q: marker, purpose: "ts_reads", since: before, status: "ok" });
    assert.deepEqual(only.calls.map((c) => [c.trace_id, c.query]), [[first.trace_id, `Which language for the ${marker} invoice?`]]);
    assert.deepEqual((await client.listCalls({ q: marker, until: before.toISOString() })).calls, []);
    assert.deepEqual((await client.listCalls({ q: marker, since: new Date(Date.now() + 3_600_000) })).calls, []);
    const page = await client.listCalls({ subject_id: who, limit: 1 });
    assert.deepEqual(page.calls.map((c) => c.trace_id), [second.trace_id]);
    const rest = await client.listCalls({ subject_id: who, limit: 1, cursor: page.next_cursor });
    assert.deepEqual(rest.calls.map((c) => c.trace_id), [first.trace_id]);

    const detail = await client.getCall(first.trace_id, { subject_id: who });
    assert.equal(detail.trace.trace_id, first.trace_id);
    assert.deepEqual(detail.trace.packet, first.packet);
    assert.equal(detail.rendered, first.block);
    assert.ok(detail.texts[fact.id]);
    await assert.rejects(client.getCall("3fdb9157-2449-4afe-a59b-5c5b0c621f5a", { subject_id: who }), NotFoundError);

    const listed = await client.listEvents({ subject_id: who, limit: 2 });
    const more = await client.listEvents({ subject_id: who, cursor: listed.next_cursor });
    assert.equal(listed.events.length, 2);
    assert.equal(more.next_cursor, null);
    assert.deepEqual([...listed.events, ...more.events].map((e) => e.id).sort(), events.map((e) => e.id).sort());

    const series = await client.statsSeries({ subject_id: who, days: 1, granularity: "hour" });
    assert.deepEqual([series.subject_id, series.granularity], [who, "hour"]);
    assert.equal(series.points.reduce((n, p) => n + p.calls, 0), 2);

    // Another project's reads: refused, each with the 403 family.
    for (const read of [
      () => client.listCalls({ project_id: "atelier-voyage" }),
      () => client.getCall(first.trace_id, { project_id: "atelier-voyage", subject_id: who }),
      () => client.statsSeries({ project_id: "atelier-voyage" }),
      () => client.listEvents({ project_id: "atelier-voyage", subject_id: who }),
    ]) {
      await assert.rejects(read(), (e) => e instanceof PermissionDeniedError && e.code === "forbidden_scope" && e.status === 403);
    }
  });

  test("a client without a project works in its key's; subjects; inspect by trace id alone", async () => {
    const saved = process.env.HAKI_PROJECT_ID;
    delete process.env.HAKI_PROJECT_ID;
    try {
      const client = new HakiClient();
      assert.equal(client.projectId, undefined);
      const who = `ts-own-${Math.random().toString(16).slice(2, 12)}`;
      await client.recordFact({ subject_id: who, predicate: "preferred_language", value: "fr", confidence: 0.95 });
      const answer = await client.context({ subject_id: who, query: "Which language does she speak?" });
      assert.equal(answer.packet.facts[0].confidence, 0.95);
      const trace = await client.inspect(answer.trace_id);
      assert.deepEqual([trace.project_id, trace.subject_id], [saved, who]);
      assert.equal((await client.getCall(answer.trace_id)).trace.trace_id, answer.trace_id);
      assert.equal((await client.listFacts({ subject_id: who, status: "active" })).facts[0].confidence, 0.95);
      const seen = [];
      let cursor;
      do {
        const page = await client.listSubjects({ limit: 3, ...(cursor ? { cursor } : {}) });
        assert.ok(page.subjects.length <= 3);
        seen.push(...page.subjects.map((s) => s.subject_id));
        cursor = page.next_cursor;
      } while (cursor);
      assert.equal(new Set(seen).size, seen.length);
      assert.ok(seen.includes(who) && seen.includes(SUBJECT));
      const mine = (await client.listSubjects({ limit: 200 })).subjects.find((s) => s.subject_id === who);
      assert.deepEqual([mine.facts, mine.events, mine.open_conflicts, mine.disabled], [1, 0, 0, false]);
    } finally {
      process.env.HAKI_PROJECT_ID = saved;
    }
  });

  test("the block of a live hostile packet, for the service to check", async () => {
    const client = haki();
    const answer = await client.context({ subject_id: HOSTILE_SUBJECT, query: HOSTILE_QUERY, purpose: "test", budget_tokens: 4000, render: true });
    assert.ok(answer.packet.facts.length >= 5);
    const block = render(answer);
    assert.equal(block.split("<haki_memory>").length, 2);
    assert.equal(block.split("</haki_memory>").length, 2);
    if (process.env.HAKI_RENDER_OUT) {
      writeFileSync(process.env.HAKI_RENDER_OUT, JSON.stringify({ trace_id: answer.trace_id, rendered: block }));
    }
  });
});

// ------------------------------------------------------------------ scripted server

/** Serve `script` (one reply per request: {status, body, headers, delayMs, raw}). */
async function stub(script) {
  const requests = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString(), at: performance.now() });
      const reply = script.shift() ?? { status: 500, body: { error: { code: "internal_error", message: "script exhausted" } } };
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(reply.status, { "Content-Type": "application/json", ...(reply.headers ?? {}) });
        res.end(reply.raw ?? JSON.stringify(reply.body));
      }, reply.delayMs ?? 0);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, requests, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

const OK = { status: 200, body: { packet: { facts: [], episodes: [], warnings: [], status: "ok", empty_reason: "no_memory" }, token_count: 0, trace_id: "3fdb9157-2449-4afe-a59b-5c5b0c621f5a" } };
const UNAVAILABLE = { status: 503, body: { error: { code: "service_unavailable", message: "retry" } } };

async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe("handles", () => {
  const packet = {
    facts: [{ id: "00000000-0000-4000-8000-00000000000a" }, { id: "00000000-0000-4000-8000-00000000000b" }],
    episodes: [{ event_id: "00000000-0000-4000-8000-0000000000e1" }],
    warnings: [], status: "ok", empty_reason: null,
  };

  test("follow the packet order, one-based; a made-up citation names nothing", () => {
    assert.deepEqual([...handles(packet).keys()], ["f1", "f2", "e1"]);
    assert.deepEqual(citedIds("see [e1] then [f2], [f2] and [f7]", packet),
      ["00000000-0000-4000-8000-0000000000e1", "00000000-0000-4000-8000-00000000000b"]);
    assert.deepEqual(resolveRefs(["f1", "[e1]", "00000000-0000-4000-8000-00000000000A"], packet),
      ["00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-0000000000e1"]);
    assert.throws(() => resolveRefs(["f3", "x"], packet), /f3, x/);
  });
});

describe("retries, timeouts and fail-open", () => {
  test("503 and 429 are retried; Retry-After is honoured", async () => {
    const s = await stub([UNAVAILABLE, { status: 429, headers: { "Retry-After": "0.05" }, body: { error: { code: "throttled", message: "x" } } }, OK]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10 });
      const answer = await client.context({ subject_id: "s", query: "q" });
      assert.equal(answer.trace_id, OK.body.trace_id);
      assert.equal(s.requests.length, 3);
      assert.ok(s.requests[2].at - s.requests[1].at >= 45);
      assert.deepEqual(JSON.parse(s.requests[0].body), { subject_id: "s", query: "q", project_id: "p", purpose: "agent_context" });
      assert.equal(s.requests[0].headers.authorization, "Bearer hk_x");
    } finally { await s.close(); }
  });

  test("render is sent only when asked", async () => {
    const s = await stub([OK, OK]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p" });
      await client.context({ subject_id: "s", query: "q", render: false });
      await client.context({ subject_id: "s", query: "q", render: true });
      const [plain, asked] = s.requests.map((r) => JSON.parse(r.body));
      assert.equal("render" in plain, false);
      assert.equal(asked.render, true);
    } finally { await s.close(); }
  });

  test("a thread goes with the messages, the context call and the listing", async () => {
    const written = { status: 201, body: { events: [{ id: "3fdb9157-2449-4afe-a59b-5c5b0c621f5a", deduplicated: false }] } };
    const page = { status: 200, body: { events: [], next_cursor: null } };
    const s = await stub([written, OK, page]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p" });
      await client.writeMessages("s", [{ role: "user", content: "hi", message_id: "m-1" }], { threadId: "t-1" });
      await client.context({ subject_id: "s", query: "q", thread_id: "t-1" });
      await client.listEvents({ subject_id: "s", thread_id: "t-1" });
      const [messages, context] = s.requests.slice(0, 2).map((r) => JSON.parse(r.body));
      assert.equal(messages.thread_id, "t-1");
      assert.equal(context.thread_id, "t-1");
      assert.equal(s.requests[2].url, "/v1/events?subject_id=s&thread_id=t-1&project_id=p");
    } finally { await s.close(); }
  });

  test("retries give up after maxRetries", async () => {
    const s = await stub([UNAVAILABLE, UNAVAILABLE, UNAVAILABLE, UNAVAILABLE]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10, maxRetries: 2 });
      assert.deepEqual(await codeOf(client.inspect("t", { subject_id: "s" })), ["service_unavailable", 503]);
      assert.equal(s.requests.length, 3);
      assert.equal(s.requests[0].url, "/v1/inspect/t?subject_id=s&project_id=p");
    } finally { await s.close(); }
  });

  for (const status of [400, 401, 403, 404, 409, 413, 422]) {
    test(`${status} is never retried and never fails open`, async () => {
      const s = await stub([{ status, body: { error: { code: `code_${status}`, message: "no" } } }, OK]);
      try {
        const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10, failOpen: true, logger: silent });
        assert.deepEqual(await codeOf(client.context({ subject_id: "s", query: "q" })), [`code_${status}`, status]);
        assert.equal(s.requests.length, 1);
      } finally { await s.close(); }
    });
  }

  test("each status family has its error class, all of them HakiErrors", async () => {
    const families = [[400, BadRequestError], [401, AuthenticationError], [403, PermissionDeniedError],
      [404, NotFoundError], [409, ConflictError], [413, BadRequestError], [422, ValidationError],
      [429, RateLimitError], [500, ServerError], [503, ServerError]];
    const s = await stub(families.map(([status]) => ({ status, body: { error: { code: `code_${status}`, message: "no" } } })));
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", maxRetries: 0 });
      for (const [status, family] of families) {
        const error = await client.listFacts({ subject_id: "s" }).then(() => null, (e) => e);
        assert.ok(error instanceof family && error instanceof HakiError, `${status}: ${error}`);
        assert.deepEqual([error.name, error.code, error.status], [family.name, `code_${status}`, status]);
        const client4xx = error instanceof BadRequestError;
        assert.equal(client4xx, status >= 400 && status < 500 && status !== 429);
      }
    } finally { await s.close(); }
    const refused = new HakiClient({ url: await closedPort(), apiKey: "hk_x", projectId: "p", maxRetries: 0 });
    await assert.rejects(refused.statsSeries(), (e) => e instanceof APIConnectionError && !(e instanceof APITimeoutError));
    const slow = await stub([{ ...OK, delayMs: 1000 }]);
    try {
      const client = new HakiClient({ url: slow.url, apiKey: "hk_x", projectId: "p", maxRetries: 0, timeoutMs: 100 });
      await assert.rejects(client.statsOverview(), (e) => e instanceof APITimeoutError && e.code === "connection_error");
    } finally { await slow.close(); }
    const html = await stub([{ status: 200, raw: "<html>hi</html>" }]);
    try {
      const client = new HakiClient({ url: html.url, apiKey: "hk_x", projectId: "p", maxRetries: 0 });
      await assert.rejects(client.listEvents({ subject_id: "s" }), (e) => e instanceof UnexpectedResponseError && e.status === 200);
    } finally { await html.close(); }
  });

  test("listCalls sends its filters, and a Date as ISO 8601", async () => {
    const empty = { status: 200, body: { calls: [], next_cursor: null } };
    const s = await stub([empty]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p" });
      await client.listCalls({ since: new Date(Date.UTC(2026, 11, 1, 8, 30)), until: "2026-12-02T00:00:00Z", warning: "open_conflict" });
      const query = Object.fromEntries(new URL(s.requests[0].url, s.url).searchParams);
      assert.deepEqual(query, { project_id: "p", since: "2026-12-01T08:30:00.000Z", until: "2026-12-02T00:00:00Z", warning: "open_conflict" });
    } finally { await s.close(); }
  });

  test("a connection error is retried, then fails open with a warning", async () => {
    const url = await closedPort();
    const strict = new HakiClient({ url, apiKey: "hk_x", projectId: "p", backoffMs: 10 });
    try {
      await strict.context({ subject_id: "s", query: "q" });
      assert.fail("expected a HakiError");
    } catch (error) {
      assert.equal(error.code, "connection_error");
      assert.equal(error.status, null);
      assert.match(error.message, /3 attempt\(s\)/);
    }
    const warnings = [];
    const lenient = new HakiClient({ url, apiKey: "hk_x", projectId: "p", backoffMs: 10, failOpen: true, logger: { warn: (m) => warnings.push(m) } });
    const answer = await lenient.context({ subject_id: "s", query: "a query that must not be logged", render: true });
    assert.equal(answer.served, false);
    assert.equal(answer.trace_id, null);
    assert.equal(answer.token_count, 0);
    assert.equal(answer.packet.status, "degraded");
    assert.match(answer.packet.warnings[0], /^haki_unavailable: connection_error/);
    assert.equal(render(answer), "");
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /fail_open/);
    assert.doesNotMatch(warnings[0], /must not be logged/);
    assert.deepEqual(await codeOf(lenient.statsOverview()), ["connection_error", null]);
  });

  test("5xx fails open after the retries", async () => {
    const s = await stub([UNAVAILABLE, UNAVAILABLE, UNAVAILABLE]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10, failOpen: true, logger: silent });
      const answer = await client.context({ subject_id: "s", query: "q" });
      assert.equal(answer.served, false);
      assert.equal(s.requests.length, 3);
    } finally { await s.close(); }
  });

  test("a slow service times out and is retried", async () => {
    const s = await stub([{ ...OK, delayMs: 1000 }, OK]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10, timeoutMs: 200 });
      const started = performance.now();
      const answer = await client.context({ subject_id: "s", query: "q" });
      assert.equal(answer.served, true);
      assert.equal(s.requests.length, 2);
      assert.ok(performance.now() - started < 1000);
    } finally { await s.close(); }
  });

  test("a call can set its own timeout", async () => {
    const s = await stub([{ ...OK, delayMs: 1000 }, { ...OK, delayMs: 1000 }]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", timeoutMs: 30_000, maxRetries: 1, backoffMs: 10 });
      const started = performance.now();
      await assert.rejects(client.inspect("3fdb9157-2449-4afe-a59b-5c5b0c621f5a", {}, { timeoutMs: 150 }),
        (e) => e instanceof APITimeoutError && /timed out after 2 attempt/.test(e.message));
      assert.ok(performance.now() - started < 900);
      assert.equal(s.requests.length, 2);
    } finally { await s.close(); }
  });

  test("a bad budget is refused before any request, naming the value", async () => {
    const url = await closedPort();
    const client = new HakiClient({ url, apiKey: "hk_x", maxRetries: 0 });
    for (const budget of [0, -5, "900", 1.5, true, 100_001, Number.NaN]) {
      await assert.rejects(client.context({ subject_id: "s", query: "q", budget_tokens: budget }),
        (e) => e instanceof ValidationError && e.code === "validation_error" && e.status === null
          && e.message.includes("budget_tokens must be a whole number of tokens from 1 to 100,000"));
    }
  });

  test("an empty apiKey is an error, not the environment's", () => {
    const saved = process.env.HAKI_API_KEY;
    process.env.HAKI_API_KEY = `hk_${"E".repeat(43)}`;
    try {
      for (const empty of ["", "  "]) {
        assert.throws(() => new HakiClient({ url: "http://127.0.0.1:1", apiKey: empty }),
          (e) => e instanceof ConfigurationError && /apiKey is empty/.test(e.message));
      }
    } finally {
      if (saved === undefined) delete process.env.HAKI_API_KEY; else process.env.HAKI_API_KEY = saved;
    }
  });

  test("an answer that is not the API's JSON is unexpected_response", async () => {
    const page = { status: 502, raw: "<html>Bad Gateway</html>" };
    const s = await stub([page, page, page]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10 });
      assert.deepEqual(await codeOf(client.statsOverview()), ["unexpected_response", 502]);
      assert.equal(s.requests.length, 3);
    } finally { await s.close(); }
  });

  test("a retried event batch carries the same idempotency keys", async () => {
    const written = { status: 201, body: { events: [{ id: "3fdb9157-2449-4afe-a59b-5c5b0c621f5a", deduplicated: true }] } };
    const s = await stub([{ status: 200, body: {}, delayMs: 1000 }, written]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10, timeoutMs: 200 });
      const answer = await client.rememberEvent({ subject_id: "s", kind: "conversation.message", text: "hello" });
      assert.equal(answer.deduplicated, true);
      assert.equal(s.requests.length, 2);
      const [first, second] = s.requests.map((r) => JSON.parse(r.body));
      assert.deepEqual(first, second);
      assert.match(first.events[0].idempotency_key, /^haki-client-/);
      assert.deepEqual(first.events[0].payload, { text: "hello" });
    } finally { await s.close(); }
  });

  test("messages without an id are dated in order and retried as sent", async () => {
    const events = [1, 2, 3].map(() => ({ id: "3fdb9157-2449-4afe-a59b-5c5b0c621f5a", deduplicated: true }));
    const s = await stub([{ status: 200, body: {}, delayMs: 1000 }, { status: 201, body: { events } }]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10, timeoutMs: 200 });
      const written = await client.writeMessages("s", [
        { role: "user", content: "hello" }, { role: "assistant", content: "hi" },
        { role: "user", content: "bye", message_id: "m-9" }]);
      assert.ok(written.events.every((e) => e.deduplicated));
      assert.equal(s.requests.length, 2);
      const [first, second] = s.requests.map((r) => JSON.parse(r.body));
      assert.deepEqual(first, second);
      assert.deepEqual([first.project_id, first.subject_id], ["p", "s"]);
      const [hello, hi, bye] = first.messages;
      assert.ok(Date.parse(hello.occurred_at) < Date.parse(hi.occurred_at));
      assert.deepEqual(bye, { role: "user", content: "bye", message_id: "m-9" });
    } finally { await s.close(); }
  });

  test("a fact write that may have run is not retried; a 503 one is", async () => {
    const s = await stub([{ status: 200, body: {}, delayMs: 1000 }, OK]);
    try {
      const client = new HakiClient({ url: s.url, apiKey: "hk_x", projectId: "p", backoffMs: 10, timeoutMs: 200 });
      assert.deepEqual(await codeOf(client.recordFact({ subject_id: "s", predicate: "p", value: 1 })), ["connection_error", null]);
      assert.equal(s.requests.length, 1);
    } finally { await s.close(); }
    const created = { status: 201, body: { facts: [{ id: "3fdb9157-2449-4afe-a59b-5c5b0c621f5a", outcome: "created", status: "active", version: 1 }] } };
    const t = await stub([UNAVAILABLE, created]);
    try {
      const client = new HakiClient({ url: t.url, apiKey: "hk_x", projectId: "p", backoffMs: 10 });
      assert.equal((await client.recordFact({ subject_id: "s", predicate: "p", value: 1 })).outcome, "created");
      assert.equal(t.requests.length, 2);
    } finally { await t.close(); }
  });

  test("backoff is jittered and capped", () => {
    const client = new HakiClient({ apiKey: "hk_x", backoffMs: 200, maxBackoffMs: 1000 });
    const draws = [];
    for (let attempt = 0; attempt < 8; attempt += 1) for (let i = 0; i < 50; i += 1) draws.push(client.delay(attempt));
    assert.ok(Math.min(...draws) >= 0 && Math.max(...draws) <= 1000);
    assert.ok(new Set(draws).size > 300);
    assert.equal(client.delay(0, 30_000), 1000);
  });

  test("no key is a configuration error", () => {
    const saved = process.env.HAKI_API_KEY;
    delete process.env.HAKI_API_KEY;
    try {
      assert.throws(() => new HakiClient({ url: "http://127.0.0.1:1" }), (e) => e instanceof ConfigurationError && e instanceof HakiError && e.code === "configuration_error");
    } finally {
      if (saved !== undefined) process.env.HAKI_API_KEY = saved;
    }
  });
});
