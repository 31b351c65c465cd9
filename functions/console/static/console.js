// The Haki console: a project's context calls (searched, filtered, paged), one call's packet
// and every decision, two calls compared, a subject's memory (facts, conflicts with resolve,
// episodes, "why not this fact?"), usage and quality charts, and the calls whose feedback
// reports missing memory, each opening on the decision of what was missing. It reads and
// writes only through the public API with the tenant's key, kept in this tab's session
// storage. Memory is tenant data and may hold markup, so every text goes into the page
// through textContent, never as HTML.

const KEY_STORE = "haki.console.key";
const PROJECT_STORE = "haki.console.project";
const PAGE = 50;
const STATUSES = ["active", "candidate", "disputed", "superseded", "disabled"];

const REASONS = {
  top_score: "ranked by hybrid score, fits the budget",
  episode_match: "a dated episode close to the query",
  over_budget: "does not fit what is left of the budget",
  volatility_expired: "past its volatility horizon",
  below_relevance_floor: "below the recall floor",
  conflict_open: "open conflict: hidden until resolved",
};

const $ = (selector) => document.querySelector(selector);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else if (name === "style") Object.assign(node.style, value);
    else if (name === "onclick") node.addEventListener("click", value);
    else if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

// ------------------------------------------------------------------ state: hash and key

const hashParams = () => new URLSearchParams(location.hash.replace(/^#/, ""));

function navigate(changes, replace = false) {
  const params = hashParams();
  for (const [name, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === "") params.delete(name);
    else params.set(name, value);
  }
  const target = `#${params}`;
  if (replace) history.replaceState(null, "", target);
  if (location.hash !== target) location.hash = target;
  else render();
}

/** The key comes from the login form only, never from a link: a URL, even its fragment, stays
 * in the browser's history and session files. A link may name a project (``#project=…``): it
 * fills the login form, and never switches a tab already open on another project without the
 * user's say. Both are taken out of the address bar. */
function takeLink() {
  const params = hashParams();
  const linked = params.get("project");
  const keyInLink = params.has("key");
  if (!linked && !keyInLink) return;
  params.delete("key");
  params.delete("project");
  history.replaceState(null, "", `${location.pathname}${location.search}#${params}`);
  if (keyInLink) status("a key in a link is not used: paste it into the form", true);
  if (!linked || linked === project()) return;
  if (!signedIn()) sessionStorage.setItem(PROJECT_STORE, linked);
  else offerSwitch(linked);
}

/** A link to another project in a signed-in tab: the tab stays on its project until the user
 * chooses to sign in to the other one (with that project's key). */
function offerSwitch(linked) {
  $("#switch-text").textContent = `This link opens project ${linked}; this tab is signed in to ` +
    `project ${project()}.`;
  $("#switch-go").textContent = `Sign in to ${linked}`;
  $("#switch-go").dataset.project = linked;
  $("#switch-stay").textContent = `Stay on ${project()}`;
  $("#switch").hidden = false;
}

const signedIn = () => Boolean(sessionStorage.getItem(KEY_STORE) && sessionStorage.getItem(PROJECT_STORE));
const project = () => sessionStorage.getItem(PROJECT_STORE);
/** The API lives beside the console: ``…/console/`` → ``…/v1/…`` (keeps a stage prefix). */
const BASE = location.pathname.replace(/\/console(\/.*)?$/, "");

function status(text, isError = false) {
  const node = $("#status");
  node.textContent = text;
  node.classList.toggle("error", isError);
}

async function api(path, query = {}, body = undefined) {
  const params = new URLSearchParams({ project_id: project() });
  for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const response = await fetch(`${BASE}/v1/${path}${body ? "" : `?${params}`}`, {
    method: body ? "POST" : "GET",
    headers: {
      Authorization: `Bearer ${sessionStorage.getItem(KEY_STORE)}`, Accept: "application/json",
      ...(body ? { "Content-Type": "application/json" } : {}),
    },
    body: body ? JSON.stringify({ project_id: project(), ...body }) : undefined,
  });
  const answer = await response.json();
  if (!response.ok) {
    const error = new Error(answer?.error?.message ?? `HTTP ${response.status}`);
    error.code = answer?.error?.code;
    error.status = response.status;
    throw error;
  }
  return answer;
}

const number = (x, digits = 3) => (x === null || x === undefined ? "—" : Number(x).toFixed(digits));
/** Every moment the console shows, in one format: `2026-12-05 09:41:07 UTC` (UTC, as the
 * date filters are), in a <time> element carrying the exact instant. */
const stamp = (iso) => `${new Date(iso).toISOString().slice(0, 19).replace("T", " ")} UTC`;
const when = (iso) => el("time", { datetime: iso, class: "when", text: stamp(iso) });
const short = (id) => id.slice(0, 8);

/** A stored value as a person reads it: text as it is; an object as `key: value` lines
 * (nested keys joined with dots), a list of plain values joined with commas. */
function readable(value, prefix = "") {
  if (value === null || value === undefined) return prefix ? `${prefix}: —` : "—";
  if (Array.isArray(value) && value.every((v) => v === null || typeof v !== "object")) {
    const joined = value.map((v) => readable(v)).join(", ");
    return prefix ? `${prefix}: ${joined}` : joined;
  }
  if (typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    if (entries.length === 0) return prefix ? `${prefix}: —` : "—";
    return entries.map(([k, v]) => readable(v, prefix ? `${prefix}.${k}` : k)).join("\n");
  }
  return prefix ? `${prefix}: ${value}` : String(value);
}

/** A candidate's text as the service gives it (`predicate: value`, a structured value as
 * JSON), with a structured value on `key: value` lines. */
function candidateText(text) {
  const match = /^([^:{}[\]]+): ([{[][^]*)$/.exec(text);
  if (match) {
    try {
      return factText(match[1], JSON.parse(match[2]));
    } catch {
      // Not JSON after all: the text as it is.
    }
  }
  return text;
}

/** A fact as `predicate: value`, its structured value on lines of its own. */
const factText = (predicate, value) => {
  const shown = readable(value);
  return shown.includes("\n") ? `${predicate}:\n${shown}` : `${predicate}: ${shown}`;
};

// ------------------------------------------------------------------ the list of calls

const FILTERS = [["q", "#q"], ["status", "#f-status"], ["warning", "#f-warning"],
  ["empty_reason", "#f-empty"], ["feedback", "#f-feedback"], ["subject_id", "#f-subject"],
  ["purpose", "#f-purpose"],
  ["since", "#f-since"], ["until", "#f-until"]];

/** The listing's query from the hash: dates are whole UTC days, ``until`` included. */
function listingQuery(params) {
  const query = {};
  for (const [name] of FILTERS) if (params.get(name)) query[name] = params.get(name);
  if (query.since) query.since = `${query.since}T00:00:00Z`;
  if (query.until) {
    const next = new Date(`${query.until}T00:00:00Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    query.until = next.toISOString();
  }
  return query;
}

const listing = { key: null, calls: [], cursor: null };

async function loadCalls(params) {
  const query = listingQuery(params);
  const key = JSON.stringify(query);
  if (listing.key !== key) {
    const page = await api("calls", { ...query, limit: PAGE });
    Object.assign(listing, { key, calls: page.calls, cursor: page.next_cursor });
  }
  for (const [name, selector] of FILTERS) $(selector).value = params.get(name) ?? "";
  showCalls(params);
}

async function olderCalls() {
  const page = await api("calls", { ...JSON.parse(listing.key), cursor: listing.cursor, limit: PAGE });
  listing.calls.push(...page.calls);
  listing.cursor = page.next_cursor;
  showCalls(hashParams());
}

function showCalls(params) {
  const selected = params.get("trace");
  const compared = params.get("b");
  const body = $("#calls tbody");
  body.replaceChildren();
  for (const call of listing.calls) {
    const open = () => navigate({ view: "call", trace: call.trace_id, subject: call.subject_id,
      b: null, bsubject: null });
    const compare = (event) => {
      event.stopPropagation();
      compareWith(call);
    };
    const row = el("tr", { "data-trace-id": call.trace_id, tabindex: "0" },
      el("td", { class: "call" },
        el("div", { class: "call-line" }, el("span", { class: "subject", text: call.subject_id, title: call.subject_id }),
          el("span", { text: "·" }), when(call.created_at),
          // One compact flag, so that the time stays whole; the codes are its tooltip.
          call.warnings.length ? el("span", { class: "flag", text: `⚠ ${call.warnings.length}`,
            title: call.warnings.map((w) => w.split(":")[0]).join(", "),
            "aria-label": `warnings: ${call.warnings.map((w) => w.split(":")[0]).join(", ")}` }) : null,
          call.missing_reported ? el("span", { class: "flag missing", text: `${call.missing_reported} missing` }) : null),
        el("div", { class: "query", text: call.query, title: call.query })),
      el("td", { class: "num", text: `${call.facts_served} · ${call.episodes_served}` }),
      el("td", { class: "num tokens", text: `${call.token_count}/${call.budget_tokens}`,
        title: `${call.token_count} tokens used of a budget of ${call.budget_tokens}` }),
      el("td", {}, el("button", { type: "button", class: "cmp", title: "Compare with the open call (c)",
        "aria-label": "Compare with the open call", text: "⇆", onclick: compare })));
    if (call.trace_id === selected) row.classList.add("selected");
    if (call.trace_id === compared) row.classList.add("compared");
    row.addEventListener("click", open);
    row.addEventListener("keydown", (event) => {
      if (event.key === "Enter") open();
      else if (event.key === "c") compare(event);
    });
    body.append(row);
  }
  if (listing.calls.length === 0) {
    body.append(el("tr", {}, el("td", { colspan: "4", text: "No call matches." })));
  }
  $("#older").hidden = !listing.cursor;
  status(`${listing.calls.length} call(s) listed${listing.cursor ? ", more older" : ""}`);
}

function compareWith(call) {
  const params = hashParams();
  if (!params.get("trace") || params.get("trace") === call.trace_id) {
    navigate({ view: "call", trace: call.trace_id, subject: call.subject_id });
    return;
  }
  navigate({ view: "compare", b: call.trace_id, bsubject: call.subject_id });
}

// ------------------------------------------------------------------ one call

const details = new Map();

async function callDetail(trace, subject) {
  const id = `${trace}/${subject}`;
  if (!details.has(id)) {
    details.set(id, await api(`calls/${encodeURIComponent(trace)}`, { subject_id: subject }));
  }
  return details.get(id);
}

function segment(kind, value, scale, label) {
  return el("span", {
    class: `seg ${kind}`, style: { width: `${Math.max(0, Math.min(1, value / scale)) * 100}%` },
    title: `${label}: ${value.toFixed(4)}`,
  });
}

/** Whether a trace was ranked by the fused list (each row carries its arms' ranks). */
const isFused = (trace) => trace.decisions.some(
  (d) => d.vector_rank != null || d.text_arm_rank != null || d.expanded_from != null);

/** The full width of every bar, the same for every call: the fused score of a candidate that
 * both arms rank first (a neighbour share may pass it; its bar is then full). Traces of
 * another ranking keep scores in [0, 1]. */
const fullScale = (ranking, fused) => (fused
  ? (ranking.rrf_weight_vector + ranking.rrf_weight_text) / (ranking.rrf_k + 1) : 1);

/** A fused score's components [css kind, value, label], adding up to the score: vector arm
 * w_v / (k + rank), text arm w_t / (k + rank), neighbour share (the rest); `null` for a
 * trace of another ranking. */
function components(decision, ranking, fused) {
  if (decision.score === null || !fused) return null;
  const arm = (weight, rank) => (rank == null ? 0 : weight / (ranking.rrf_k + rank));
  const vector = arm(ranking.rrf_weight_vector, decision.vector_rank);
  const text = arm(ranking.rrf_weight_text, decision.text_arm_rank);
  return [["sim", vector, `vector arm (rank ${decision.vector_rank ?? "—"})`],
    ["text", text, `text arm (rank ${decision.text_arm_rank ?? "—"})`],
    ["rec", Math.max(0, decision.score - vector - text), "neighbour share"]];
}

function scoreBar(decision, ranking, fused) {
  if (decision.score === null) return el("span", { class: "score-value", text: "not scored" });
  const scale = fullScale(ranking, fused);
  const label = el("span", { class: "score-value", text: `score ${number(decision.score, 4)}` });
  const parts = components(decision, ranking, fused);
  const bar = el("div", { class: "bar" });
  if (parts === null) bar.append(segment("other", decision.score, scale, "score"));
  else for (const [kind, value, name] of parts) if (value > 0) bar.append(segment(kind, value, scale, name));
  return el("div", {}, bar, label);
}

function legend(ranking, fused) {
  const item = (kind, text) => el("span", {}, el("span", { class: `swatch ${kind}` }), text);
  const width = `full width = score ${number(fullScale(ranking, fused), 4)}, the same for every call`;
  if (!fused) return [item("other", "score (another ranking)"), el("span", { text: width })];
  return [item("sim", `vector arm: ${ranking.rrf_weight_vector} / (${ranking.rrf_k} + rank)`),
    item("text", `text arm: ${ranking.rrf_weight_text} / (${ranking.rrf_k} + rank)`),
    item("rec", "neighbour share"), el("span", { text: width })];
}

function reasonOf(decision, left) {
  return decision.reason_code === "over_budget"
    ? `needs ${decision.tokens} tokens, ${left} left` : REASONS[decision.reason_code] ?? "";
}

function showCall(data) {
  const { trace, ranking, texts, rendered } = data;
  const fused = isFused(trace);
  $("#trace-id").textContent = trace.trace_id;
  $("#to-memory").href = `#${new URLSearchParams({ view: "memory", subject: trace.subject_id, trace: trace.trace_id })}`;

  const meta = $("#call-meta");
  meta.replaceChildren();
  for (const [name, value] of [["subject", trace.subject_id], ["query", trace.query],
    ["purpose", trace.purpose ?? "— (none given)"], ["at", when(trace.created_at)],
    ["status", `${trace.packet.status}${trace.packet.empty_reason ? ` (${trace.packet.empty_reason})` : ""}`]]) {
    meta.append(el("dt", { text: name }), typeof value === "string" ? el("dd", { text: value }) : el("dd", {}, value));
  }
  const share = trace.budget_tokens > 0 ? Math.min(1, trace.token_count / trace.budget_tokens) : 0;
  $("#budget .budget-label").textContent =
    `Budget: ${trace.token_count} of ${trace.budget_tokens} tokens used (${Math.round(share * 100)}%)`;
  $("#budget .gauge-fill").style.width = `${share * 100}%`;
  $("#warnings").replaceChildren(...trace.packet.warnings.map((w) => el("li", { text: w })));
  const pre = $("#rendered");
  pre.textContent = rendered || "(an empty packet: nothing is injected)";
  pre.classList.toggle("empty", !rendered);

  $("#legend").replaceChildren(...legend(ranking, fused));
  const columns = [["sim.", (d) => number(d.similarity)],
    ["vec #", (d) => d.vector_rank ?? "—"], ["text #", (d) => d.text_arm_rank ?? "—"]];
  $("#decisions thead").replaceChildren(el("tr", {},
    ...["Rank", "Candidate", "Decision", "Score"].map((name, i) => el("th", { class: i === 0 ? "num" : "", text: name })),
    ...columns.map(([name]) => el("th", { class: "num", text: name,
      title: { "sim.": "similarity", "vec #": "vector arm rank", "text #": "text arm rank" }[name] })),
    el("th", { class: "num", text: "tokens" }), el("th", { class: "num", text: "packed" })));

  const feedback = trace.feedback ?? [];
  const missing = new Set(feedback.flatMap((f) => f.missing));
  const used = new Set(feedback.flatMap((f) => f.used));
  showFeedback(data, missing);

  const body = $("#decisions tbody");
  body.replaceChildren();
  let packed = 0;
  let budgetLineDrawn = false;
  const budgetLine = (text) => el("tr", { class: "budget-line" }, el("td", { colspan: "9", text }));
  for (const decision of trace.decisions) {
    if (decision.reason_code === "over_budget" && !budgetLineDrawn) {
      body.append(budgetLine(`Budget line: ${trace.budget_tokens} tokens — ${packed} packed so far, ` +
        `${trace.budget_tokens - packed} left; a candidate below that does not fit is excluded over_budget`));
      budgetLineDrawn = true;
    }
    const id = decision.fact_id ?? decision.event_id;
    const left = trace.budget_tokens - packed;
    if (decision.action === "included") packed += decision.tokens ?? 0;
    const note = [decision.fact_id ? "fact" : "episode", short(id),
      decision.unconfirmed ? "unconfirmed" : null,
      decision.expanded_from ? `next to ${short(decision.expanded_from)}` : null].filter(Boolean);
    const reported = missing.has(id) ? " missing" : used.has(id) ? " used" : "";
    body.append(el("tr", { class: `decision ${decision.action}${reported}`, "data-action": decision.action, "data-id": id },
      el("td", { class: "num", text: decision.rank ?? "—" }),
      el("td", { class: "candidate" },
        el("span", { class: "label", text: id in texts ? candidateText(texts[id]) : "(erased since)" }),
        el("span", { class: "id", text: note.join(" · ") })),
      el("td", { class: "decision" },
        el("span", { class: `badge ${decision.action}`, text: decision.action }),
        el("span", { class: "reason", text: decision.reason_code }),
        decision.action === "included" ? null : el("span", { class: "reason", text: reasonOf(decision, left) })),
      el("td", { class: "score" }, scoreBar(decision, ranking, fused)),
      ...columns.map(([, value]) => el("td", { class: "num", text: value(decision) })),
      el("td", { class: "num", text: decision.tokens ?? "—" }),
      el("td", { class: "num", text: decision.action === "included" ? String(packed) : "" })));
  }
}

/** The call's feedback, one line per source, and for each item reported missing why the call
 * did not serve it: its own decision (highlighted in the table), or no decision at all. */
function showFeedback({ trace, texts }, missing) {
  const feedback = trace.feedback ?? [];
  $("#feedback-panel").hidden = feedback.length === 0;
  $("#feedback").replaceChildren(...feedback.map((f) => el("li", { "data-source": f.source },
    el("strong", { text: f.source }),
    el("span", { text: ` · ${f.verdict ?? "no verdict"} · ${f.used.length} used · ${f.missing.length} missing` }),
    f.note ? el("span", { class: "hint", text: ` · “${f.note}”` }) : null)));
  const decisions = new Map(trace.decisions.map((d) => [d.fact_id ?? d.event_id, d]));
  // What was left of the budget when the packer came to each candidate.
  const left = new Map();
  let packed = 0;
  for (const d of trace.decisions) {
    left.set(d.fact_id ?? d.event_id, trace.budget_tokens - packed);
    if (d.action === "included") packed += d.tokens ?? 0;
  }
  $("#why-missing").replaceChildren(...[...missing].map((id) => {
    const decision = decisions.get(id);
    const what = texts[id] ?? `${short(id)} (not among this call's candidates)`;
    const why = decision
      ? `${decision.action}: ${decision.reason_code} — ${reasonOf(decision, left.get(id))}` +
        `${decision.rank == null ? "" : ` (rank ${decision.rank})`}`
      : "never a candidate: neither the vector arm nor the text arm retrieved it for this query";
    return el("li", { "data-missing-id": id, "data-decision": decision ? decision.action : "none" },
      el("span", { class: "label", text: what }), el("span", { class: "reason", text: ` — ${why}` }));
  }));
}

// ------------------------------------------------------------------ two calls compared

/** Each candidate of either call: entered (served by the second only), left (by the first
 * only), moved (served by both at another rank), or kept / still out. */
function changes(a, b) {
  const byId = (trace) => new Map(trace.decisions.map((d) => [d.fact_id ?? d.event_id, d]));
  const first = byId(a.trace);
  const second = byId(b.trace);
  const ids = [...new Set([...first.keys(), ...second.keys()])];
  const served = (d) => d?.action === "included";
  const rows = ids.map((id) => {
    const [x, y] = [first.get(id), second.get(id)];
    let change = "out";
    if (served(y) && !served(x)) change = "entered";
    else if (served(x) && !served(y)) change = "left";
    else if (served(x) && served(y)) change = x.rank === y.rank ? "kept" : "moved";
    const text = b.texts[id] ?? a.texts[id];
    return { id, x, y, change, text: text === undefined ? "(erased since)" : candidateText(text) };
  });
  const order = { entered: 0, left: 1, moved: 2, kept: 3, out: 4 };
  return rows.sort((p, q) => order[p.change] - order[q.change]);
}

function showCompare(a, b) {
  const head = (data, label) => el("div", { class: "call-head" },
    el("h3", { text: label }),
    el("p", { class: "q", text: data.trace.query }),
    el("p", { class: "hint" }, `${data.trace.subject_id} · `, when(data.trace.created_at),
      ` · ${data.trace.token_count}/${data.trace.budget_tokens} tokens · ${data.trace.packet.facts.length} facts, ` +
      `${data.trace.packet.episodes.length} episodes`),
    ...data.trace.packet.warnings.map((w) => el("p", { class: "warn", text: w })));
  $("#compare-heads").replaceChildren(head(a, "First call"), head(b, "Second call"));
  const side = (d) => (d === undefined ? el("td", { class: "absent", text: "not a candidate" })
    : el("td", {}, el("span", { class: `badge ${d.action}`, text: d.action }),
      el("span", { class: "reason", text: `${d.reason_code}${d.rank == null ? "" : ` · rank ${d.rank}`}` }),
      scoreBar(d, a.ranking, isFused(a.trace) || isFused(b.trace))));
  const body = $("#changes tbody");
  body.replaceChildren(...changes(a, b).map((row) => el("tr", { class: `change ${row.change}`, "data-change": row.change, "data-id": row.id },
    el("td", {}, el("span", { class: `chip ${row.change}`, text: row.change })),
    el("td", { class: "candidate" }, el("span", { class: "label", text: row.text }),
      el("span", { class: "id", text: short(row.id) })),
    side(row.x), side(row.y))));
}

// ------------------------------------------------------------------ memory of a subject

/** Why ``fact`` was or was not served by the call ``detail``: its decision in the trace, or
 * the rule that kept it from being a candidate at all. */
function whyNot(fact, detail) {
  const { trace } = detail;
  const decision = trace.decisions.find((d) => d.fact_id === fact.id);
  if (decision) {
    const verdict = decision.action === "included" ? "served" : decision.action;
    return `${verdict} in this call: ${decision.reason_code} — ${REASONS[decision.reason_code] ?? ""}` +
      `${decision.rank == null ? "" : ` (rank ${decision.rank}, score ${number(decision.score, 4)})`}`;
  }
  const at = new Date(trace.created_at);
  if (new Date(fact.recorded_from) > at) return `not in this call: recorded ${stamp(fact.recorded_from)}, after the call`;
  if (fact.status !== "active") {
    return `kept out before scoring: its status is ${fact.status} now (only active facts are candidates)`;
  }
  if (fact.valid_to && new Date(fact.valid_to) <= at) return `kept out before scoring: valid only until ${stamp(fact.valid_to)}`;
  if (fact.valid_from && new Date(fact.valid_from) > at) return `kept out before scoring: valid from ${stamp(fact.valid_from)}`;
  return "not retrieved: neither the vector arm nor the text arm ranked it among this call's candidates";
}

async function allOf(path, query, field) {
  const rows = [];
  let cursor = null;
  do {
    const page = await api(path, { ...query, cursor, limit: 200 });
    rows.push(...page[field]);
    cursor = page.next_cursor;
  } while (cursor && rows.length < 1000);
  return rows;
}

async function showMemory(params) {
  const subject = params.get("subject");
  $("#memory-subject").textContent = subject ?? "";
  $("#memory-subject-input").value = subject ?? "";
  await showSubjects();
  if (!subject) {
    for (const id of ["#conflicts", "#fact-groups", "#episodes"]) $(id).replaceChildren();
    $("#why-context").textContent = "Choose a subject below, or type its id.";
    return;
  }
  const trace = params.get("trace");
  const detail = trace ? await callDetail(trace, subject).catch(() => null) : null;
  $("#why-context").textContent = detail
    ? `"Why not?" explains each fact for the call ${short(trace)} (${detail.trace.query})`
    : "Open a call of this subject to ask why a fact was not served.";
  const [conflicts, episodes, ...groups] = await Promise.all([
    allOf("conflicts", { subject_id: subject, status: "open" }, "conflicts"),
    api("events", { subject_id: subject, limit: 20 }),
    ...STATUSES.map((s) => allOf("facts", { subject_id: subject, status: s }, "facts"))]);

  const known = new Map(groups.flat().map((fact) => [fact.id, fact]));
  $("#conflicts").replaceChildren(...(conflicts.length
    ? conflicts.map((set) => conflictCard(set, known))
    : [el("p", { class: "hint", text: "No open conflict." })]));

  $("#fact-groups").replaceChildren(...STATUSES.map((name, i) => el("details", { open: name === "active" ? "" : null, "data-status": name },
    el("summary", { text: `${name} (${groups[i].length})` }),
    el("table", { class: "facts" }, el("tbody", {}, ...groups[i].map((fact) => {
      const why = el("td", { class: "why" });
      return el("tr", { "data-fact-id": fact.id },
        el("td", { class: "label", text: factText(fact.predicate, fact.value) }),
        el("td", { class: "num", text: `v${fact.version}` }),
        el("td", {}, el("button", { type: "button", class: "why-not", disabled: detail ? null : "",
          text: "Why not?", onclick: () => { why.textContent = whyNot(fact, detail); } })),
        why);
    }))))));

  // Newest first, as listed: the events of one time in the reverse of the order written.
  $("#episodes").replaceChildren(...episodes.events.map((event) => el("li", { "data-thread": event.thread_id ?? null },
    el("span", { class: "hint" }, when(event.occurred_at), ` · ${event.kind}${event.thread_id ? ` · ${event.thread_id}` : ""} `),
    el("span", { class: "payload", text: typeof event.payload.text === "string" ? event.payload.text : readable(event.payload) }))));
}

/** What a person needs to choose a fact of a conflict: its value, when it was recorded, from
 * which sources and with what confidence. */
function memberDetails(fact, full) {
  if (!full) return "recorded —";
  const sources = full.source_event_ids.length
    ? `sources ${full.source_event_ids.map(short).join(", ")}` : "no source event";
  const confidence = full.confidence == null ? "no confidence given" : `confidence ${full.confidence}`;
  return `recorded ${stamp(full.recorded_from)} · ${sources} · ${confidence}`;
}

/** An open conflict: each fact with its details and a "Keep this one" that asks first. */
function conflictCard(set, known) {
  const confirm = el("div", { class: "confirm", role: "alertdialog", hidden: "" });
  const ask = (fact) => {
    const others = set.facts.length - 1;
    confirm.replaceChildren(
      el("p", { text: `Keep ${factText(fact.predicate, fact.value)} (${memberDetails(fact, known.get(fact.id))})? ` +
        (others === 1 ? "The other fact of this conflict becomes superseded."
          : `The other ${others} facts of this conflict become superseded.`) }),
      el("button", { type: "button", class: "confirm-keep", onclick: () => resolve(set.id, fact.id) }, "Keep it, supersede the others"),
      el("button", { type: "button", class: "cancel", onclick: () => { confirm.hidden = true; } }, "Cancel"));
    confirm.hidden = false;
    confirm.querySelector("button.cancel").focus();
  };
  return el("div", { class: "conflict", "data-conflict-id": set.id },
    el("p", { class: "hint" }, `${set.reason} · opened `, when(set.created_at)),
    el("ul", {}, ...set.facts.map((fact) => el("li", { "data-fact-id": fact.id },
      el("div", {}, el("span", { class: "label", text: factText(fact.predicate, fact.value) }),
        el("span", { class: "member", text: memberDetails(fact, known.get(fact.id)) })),
      el("button", { type: "button", class: "keep", "data-fact-id": fact.id, text: "Keep this one…",
        onclick: () => ask(fact) })))),
    confirm);
}

const subjects = { rows: [], cursor: null };

async function showSubjects(more = false) {
  const page = await api("subjects", { cursor: more ? subjects.cursor : null, limit: PAGE });
  subjects.rows = more ? [...subjects.rows, ...page.subjects] : page.subjects;
  subjects.cursor = page.next_cursor;
  const current = hashParams().get("subject");
  $("#subjects tbody").replaceChildren(...(subjects.rows.length ? subjects.rows.map((s) => {
    const row = el("tr", { "data-subject-id": s.subject_id, tabindex: "0", class: s.subject_id === current ? "selected" : "" },
      el("td", { class: "subject", text: s.subject_id, title: s.disabled ? "disabled: nothing of it is served" : s.subject_id },
        s.disabled ? el("span", { class: "flag", text: "disabled" }) : null),
      el("td", { class: "num", text: String(s.facts) }), el("td", { class: "num", text: String(s.events) }),
      el("td", { class: "num", text: String(s.open_conflicts) }), el("td", {}, when(s.last_activity_at)));
    const open = () => navigate({ view: "memory", subject: s.subject_id, trace: null });
    row.addEventListener("click", open);
    row.addEventListener("keydown", (event) => { if (event.key === "Enter") open(); });
    return row;
  }) : [el("tr", {}, el("td", { colspan: "5", text: "No subject holds memory yet." }))]));
  $("#more-subjects").hidden = !subjects.cursor;
}

async function resolve(conflictId, factId) {
  await api(`conflicts/${encodeURIComponent(conflictId)}/resolve`, {}, { keep_fact_id: factId });
  status(`conflict ${short(conflictId)} resolved: kept ${short(factId)}`);
  listing.key = null;
  await showMemory(hashParams());
}

// ------------------------------------------------------------------ charts

const charts = [];

async function showCharts(params) {
  const days = params.get("days") ?? "7";
  const subject = params.get("subject") ?? "";
  $("#charts-days").value = days;
  $("#charts-subject").value = subject;
  const granularity = Number(days) > 2 ? "day" : "hour";
  const [whole, one] = await Promise.all([
    api("stats/series", { days, granularity }),
    subject ? api("stats/series", { days, granularity, subject_id: subject }) : null]);
  const xs = whole.points.map((p) => new Date(p.start).getTime() / 1000);
  const of = (series, field) => {
    const byStart = new Map(series.points.map((p) => [new Date(p.start).getTime() / 1000, p[field]]));
    return xs.map((x) => byStart.get(x) ?? null);
  };
  // Counts as bars (a bucket is a count, and one bucket is still a bar), rates and latencies
  // as lines with markers; every y axis starts at 0 with room above its highest value, the
  // rates run 0–1. The project and the subject each have a colour of their own.
  const panels = [["Calls", ["calls"], "bars"], ["Latency p50 / p95 (ms)", ["latency_p50_ms", "latency_p95_ms"], "line"],
    ["Injection rate (share of calls served a fact)", ["injection_rate"], "rate"], ["Tokens served", ["tokens_served"], "bars"],
    ["Share of served items used", ["used_share"], "rate"],
    ["Calls with missing memory reported", ["calls_with_missing"], "bars"],
    ["Tokens per used item", ["tokens_per_used_item"], "line"]];
  const names = { latency_p50_ms: "p50 ", latency_p95_ms: "p95 " };
  // The whole window on the x axis, so that a single bucket is drawn where it lies in it,
  // with room on each side for the bars of the first and the last bucket.
  const [since, now] = [new Date(whole.since).getTime() / 1000, Date.now() / 1000];
  const pad = Math.max(granularity === "day" ? 86_400 : 3_600, (now - since) * 0.05);
  const span = [since - pad, now + pad];
  const PROJECT_COLOURS = ["#3867d6", "#0b3d91"];
  const SUBJECT_COLOURS = ["#e8590c", "#a61e4d"];
  for (const chart of charts.splice(0)) chart.destroy();
  const grid = $("#chart-grid");
  grid.replaceChildren();
  await showMissingCalls(subject);
  if (xs.length === 0) {
    grid.append(el("p", { class: "hint", text: "No call in this window." }));
    return;
  }
  const width = Math.max(280, Math.min(560, grid.clientWidth / 2 - 24));
  // The project's bar left of its bucket, the subject's right of it, side by side.
  const bars = [uPlot.paths.bars({ size: [0.3, 10], align: -1 }),
    uPlot.paths.bars({ size: [0.3, 10], align: 1 })];
  for (const [title, fields, kind] of panels) {
    const box = el("div", { class: "chart", "data-chart": fields[0] }, el("h3", { text: title }));
    grid.append(box);
    const series = [{}];
    const data = [xs];
    const style = (colour, dash, side) => (kind === "bars"
      ? { stroke: colour, fill: `${colour}cc`, width: 1, paths: bars[side], points: { show: false } }
      : { stroke: colour, width: 2, dash, points: { show: true, size: 8, fill: colour } });
    for (const [j, field] of fields.entries()) {
      const name = names[field] ?? "";
      series.push({ label: `${name}project`, ...style(PROJECT_COLOURS[j], undefined, 0) });
      data.push(of(whole, field));
      if (one) {
        series.push({ label: `${name}${subject}`, ...style(SUBJECT_COLOURS[j], [4, 4], 1) });
        data.push(of(one, field));
      }
    }
    const highest = Math.max(0, ...data.slice(1).flat().filter((v) => v != null));
    const y = kind === "rate" ? [0, 1] : [0, highest > 0 ? highest * 1.2 : 1];
    Object.assign(box.dataset, { kind, yRange: y.join(",") });
    // Rates in per cent; counts in whole steps (no "0.5 calls").
    const counts = [1, 2, 5].flatMap((step) => [1, 10, 100, 1e3, 1e4, 1e5].map((scale) => step * scale))
      .sort((a, b) => a - b);
    const yAxis = kind === "rate" ? { values: (u, ticks) => ticks.map((t) => `${Math.round(t * 100)}%`) }
      : kind === "bars" ? { incrs: counts } : {};
    charts.push(new uPlot({
      width, height: 180, series,
      scales: { x: { time: true, range: () => span }, y: { range: () => y } },
      axes: [{}, yAxis],
    }, data, box));
  }
}

/** The calls whose feedback reports missing memory, newest first; each opens on the call. */
async function showMissingCalls(subject) {
  const page = await api("calls", { feedback: "missing", subject_id: subject, limit: 20 });
  const list = $("#missing-calls");
  list.replaceChildren(...page.calls.map((call) => el("li", { "data-trace-id": call.trace_id },
    el("a", { href: `#${new URLSearchParams({ view: "call", trace: call.trace_id, subject: call.subject_id })}`,
      text: call.query }),
    el("span", { class: "hint" }, ` · ${call.subject_id} · `, when(call.created_at), ` · ${call.missing_reported} missing`))));
  if (page.calls.length === 0) list.append(el("li", { class: "hint", text: "No call with missing memory reported." }));
}

// ------------------------------------------------------------------ views and wiring

function showView(view) {
  for (const id of ["detail", "compare", "memory", "charts"]) $(`#${id}`).hidden = true;
  const section = { call: "detail", compare: "compare", memory: "memory", charts: "charts" }[view];
  if (section) $(`#${section}`).hidden = false;
  for (const link of document.querySelectorAll("#views a")) {
    link.classList.toggle("active", link.dataset.view === view || (view === "call" && link.dataset.view === "calls")
      || (view === "compare" && link.dataset.view === "calls"));
  }
}

async function render() {
  document.body.dataset.ready = "false";
  const params = hashParams();
  const view = params.get("view") ?? "call";
  try {
    $("#project").textContent = `project ${project()}`;
    showView(view);
    await loadCalls(params);
    if (view === "call") {
      let trace = params.get("trace");
      let subject = params.get("subject");
      if (!trace && listing.calls.length) ({ trace_id: trace, subject_id: subject } = listing.calls[0]);
      if (trace) showCall(await callDetail(trace, subject ?? ""));
      else $("#detail").hidden = true;
    } else if (view === "compare") {
      const [a, b] = await Promise.all([callDetail(params.get("trace"), params.get("subject")),
        callDetail(params.get("b"), params.get("bsubject"))]);
      showCompare(a, b);
    } else if (view === "memory") {
      await showMemory(params);
    } else if (view === "charts") {
      await showCharts(params);
    }
  } catch (error) {
    status(`${error.code ?? "error"}: ${error.message}`, true);
    if (error.status === 401 || (error.status === 403 && error.code !== "forbidden_scope")) logout();
  } finally {
    document.body.dataset.ready = "true";
    document.body.dataset.renders = String(Number(document.body.dataset.renders ?? 0) + 1);
  }
}

function logout() {
  sessionStorage.removeItem(KEY_STORE);
  $("#switch").hidden = true;
  $("#app").hidden = true;
  $("#logout").hidden = true;
  $("#login").hidden = false;
  $("#login-project").value = project() ?? "";
}

function start() {
  $("#login").hidden = true;
  $("#app").hidden = false;
  $("#logout").hidden = false;
  render();
}

$("#login").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(PROJECT_STORE, $("#login-project").value.trim());
  sessionStorage.setItem(KEY_STORE, $("#key").value.trim());
  $("#key").value = "";
  listing.key = null;
  details.clear();
  start();
});
$("#logout").addEventListener("click", logout);
$("#switch-go").addEventListener("click", () => {
  sessionStorage.setItem(PROJECT_STORE, $("#switch-go").dataset.project);
  logout();
  status(`enter the API key of project ${project()}`);
});
$("#switch-stay").addEventListener("click", () => { $("#switch").hidden = true; });
$("#search").addEventListener("submit", (event) => {
  event.preventDefault();
  const changes = Object.fromEntries(FILTERS.map(([name, selector]) => [name, $(selector).value.trim()]));
  navigate(changes);
});
$("#older").addEventListener("click", () => olderCalls().catch((e) => status(e.message, true)));
$("#more-subjects").addEventListener("click", () => showSubjects(true).catch((e) => status(e.message, true)));
$("#memory-form").addEventListener("submit", (event) => {
  event.preventDefault();
  navigate({ view: "memory", subject: $("#memory-subject-input").value.trim() });
});
$("#charts-form").addEventListener("submit", (event) => {
  event.preventDefault();
  navigate({ view: "charts", days: $("#charts-days").value, subject: $("#charts-subject").value.trim() });
});
for (const link of document.querySelectorAll("#views a")) {
  link.addEventListener("click", (event) => {
    event.preventDefault();
    navigate({ view: link.dataset.view === "calls" ? "call" : link.dataset.view });
  });
}
document.addEventListener("keydown", (event) => {
  if (event.target.closest("input, select, textarea") || event.ctrlKey || event.metaKey || event.altKey) return;
  const rows = [...document.querySelectorAll("#calls tbody tr[data-trace-id]")];
  const at = rows.indexOf(document.activeElement);
  if (event.key === "j" || event.key === "ArrowDown") rows[Math.min(rows.length - 1, at + 1)]?.focus();
  else if (event.key === "k" || event.key === "ArrowUp") rows[Math.max(0, at - 1)]?.focus();
  else if (event.key === "/") $("#q").focus();
  else if (event.key === "m") navigate({ view: "memory" });
  else if (event.key === "g") navigate({ view: "charts" });
  else if (event.key === "Escape") navigate({ view: "call", b: null, bsubject: null });
  else return;
  event.preventDefault();
});
window.addEventListener("hashchange", () => {
  takeLink();
  if (signedIn()) render();
  else $("#login-project").value = project() ?? "";
});

takeLink();
if (signedIn()) {
  start();
} else {
  const refused = $("#status").classList.contains("error");
  logout();
  if (!refused) status("enter the project and its API key");
  document.body.dataset.ready = "true";
}
