// The Haki trace console: recent context calls of the dev key's project and, for one call,
// the packet served and every decision with its score components. Memory is tenant data and
// may hold markup, so every text goes into the page through textContent, never as HTML.

const KEY_STORE = "haki.console.key";

const REASONS = {
  top_score: "ranked by hybrid score, fits the budget",
  multi_hop_expansion: "shares an entity with an included fact",
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
    else if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function hashParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

/** The key: from the URL fragment once (then removed from the address bar), else the tab's
 * session storage, else the login form. */
function takeKey() {
  const params = hashParams();
  const fromHash = params.get("key");
  if (fromHash) {
    sessionStorage.setItem(KEY_STORE, fromHash);
    params.delete("key");
    history.replaceState(null, "", `${location.pathname}${location.search}#${params}`);
  }
  return sessionStorage.getItem(KEY_STORE);
}

function status(text, isError = false) {
  const node = $("#status");
  node.textContent = text;
  node.classList.toggle("error", isError);
}

async function api(path) {
  const key = sessionStorage.getItem(KEY_STORE);
  const response = await fetch(`/console/api/${path}`, {
    headers: { Authorization: `Bearer ${key}`, Accept: "application/json" },
  });
  const body = await response.json();
  if (!response.ok) {
    const error = new Error(body?.error?.message ?? `HTTP ${response.status}`);
    error.code = body?.error?.code;
    error.status = response.status;
    throw error;
  }
  return body;
}

const number = (x, digits = 3) => (x === null || x === undefined ? "—" : Number(x).toFixed(digits));
const when = (iso) => new Date(iso).toLocaleTimeString(undefined, {
  hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
});

// ------------------------------------------------------------------ the list of calls

function showCalls(calls, selected) {
  const body = $("#calls tbody");
  body.replaceChildren();
  for (const call of calls) {
    const row = el("tr", { "data-trace-id": call.trace_id },
      el("td", { class: "num", text: when(call.created_at), title: call.created_at }),
      el("td", { text: call.subject_id, title: call.subject_id }),
      el("td", { class: "query", text: call.query, title: call.query }),
      el("td", { class: "num", text: `${call.facts_served} · ${call.episodes_served}` }),
      el("td", { class: "num", text: `${call.token_count} / ${call.budget_tokens}` }),
      el("td", { class: "num", text: call.latency_ms == null ? "—" : call.latency_ms.toFixed(0) }));
    if (call.trace_id === selected) row.classList.add("selected");
    row.addEventListener("click", () => {
      location.hash = new URLSearchParams({ trace: call.trace_id, subject: call.subject_id }).toString();
    });
    body.append(row);
  }
  if (calls.length === 0) {
    body.append(el("tr", {}, el("td", { colspan: "6", text: "No context call yet: POST /v1/context, then reload." })));
  }
}

// ------------------------------------------------------------------ one call

function segment(kind, value, scale, label) {
  return el("span", {
    class: `seg ${kind}`, style: { width: `${Math.max(0, Math.min(1, value / scale)) * 100}%` },
    title: `${label}: ${value.toFixed(4)}`,
  });
}

/** Whether a trace was ranked by the fused list (each row carries its arms' ranks). */
const isFused = (trace) => trace.decisions.some(
  (d) => d.vector_rank != null || d.text_arm_rank != null || d.expanded_from != null);

/** A score's components, each as [css kind, value, label], adding up to the score:
 * - fused: vector arm w_v / (k + rank), text arm w_t / (k + rank), neighbour share (the rest);
 * - seed, facts: the weighted similarity, text rank and recency; episodes: similarity alone.
 * `null` when they do not add up (the trace was ranked under another configuration). */
function components(decision, ranking, fused) {
  if (decision.score === null) return null;
  let parts;
  if (fused) {
    const arm = (weight, rank) => (rank == null ? 0 : weight / (ranking.rrf_k + rank));
    const vector = arm(ranking.rrf_weight_vector, decision.vector_rank);
    const text = arm(ranking.rrf_weight_text, decision.text_arm_rank);
    parts = [["sim", vector, `vector arm (rank ${decision.vector_rank ?? "—"})`],
      ["text", text, `text arm (rank ${decision.text_arm_rank ?? "—"})`],
      ["rec", Math.max(0, decision.score - vector - text), "neighbour share"]];
  } else if (decision.fact_id === null) {
    parts = [["sim", decision.similarity ?? decision.score, "similarity"]];
  } else {
    const w = ranking.weights;
    parts = [["sim", w.similarity * (decision.similarity ?? 0), `${w.similarity} × similarity`],
      ["text", w.text_rank * (decision.text_rank ?? 0), `${w.text_rank} × text rank`],
      ["rec", w.recency * (decision.recency ?? 0), `${w.recency} × recency`]];
  }
  const sum = parts.reduce((total, [, value]) => total + value, 0);
  return Math.abs(sum - decision.score) <= 0.005 * Math.max(1, decision.score) ? parts : null;
}

/** The score as a bar of its stacked components; `scale` is the full-width score. */
function scoreBar(decision, ranking, fused, scale) {
  if (decision.score === null) return el("span", { class: "score-value", text: "not scored" });
  const label = el("span", { class: "score-value", text: `score ${number(decision.score, 4)}` });
  const parts = components(decision, ranking, fused);
  if (parts === null) {
    return el("div", {}, el("div", { class: "bar" },
      segment("other", decision.score, scale, "score (components of another ranking)")), label);
  }
  const bar = el("div", { class: "bar" });
  for (const [kind, value, name] of parts) if (value > 0) bar.append(segment(kind, value, scale, name));
  return el("div", {}, bar, label);
}

/** Phases of the seed packer: ranked facts, multi-hop facts, episodes (each ranked from 1);
 * the fused list is one phase. */
function phaseOf(decision, previous, fused) {
  if (fused) return "fused";
  if (decision.event_id !== null) return "episodes";
  if (decision.reason_code === "multi_hop_expansion") return "multi-hop";
  if (previous && previous.phase !== "facts") return previous.phase;
  if (previous && decision.rank !== null && previous.rank !== null && decision.rank <= previous.rank) {
    return "multi-hop";
  }
  return "facts";
}

const PHASE_TITLES = {
  fused: "Facts and episodes, one list ranked by the fused score (reciprocal-rank fusion)",
  facts: "Facts, ranked by hybrid score",
  "multi-hop": "Multi-hop facts (entities shared with the facts included)",
  episodes: "Episodes, ranked by similarity",
};

function legend(ranking, fused) {
  const item = (kind, text) => el("span", {}, el("span", { class: `swatch ${kind}` }), text);
  if (fused) {
    return [item("sim", `vector arm: ${ranking.rrf_weight_vector} / (${ranking.rrf_k} + rank)`),
      item("text", `text arm: ${ranking.rrf_weight_text} / (${ranking.rrf_k} + rank)`),
      item("rec", "neighbour share (from the episode it follows or precedes)"),
      el("span", { text: "full width = the best score of this call" })];
  }
  const w = ranking.weights;
  return [item("sim", `${w.similarity} × similarity`), item("text", `${w.text_rank} × text rank`),
    item("rec", `${w.recency} × recency`), el("span", { text: "full width = score 1.0" })];
}

function showCall(data) {
  const { trace, ranking, texts, rendered } = data;
  const fused = isFused(trace);
  $("#detail").hidden = false;
  $("#trace-id").textContent = trace.trace_id;

  const meta = $("#call-meta");
  meta.replaceChildren();
  for (const [name, value] of [["subject", trace.subject_id], ["query", trace.query],
    ["purpose", trace.purpose ?? "— (none given)"], ["at", trace.created_at],
    ["ranking", fused ? "fused" : "seed"],
    ["status", `${trace.packet.status}${trace.packet.empty_reason ? ` (${trace.packet.empty_reason})` : ""}`]]) {
    meta.append(el("dt", { text: name }), el("dd", { text: value }));
  }

  const share = trace.budget_tokens > 0 ? Math.min(1, trace.token_count / trace.budget_tokens) : 0;
  $("#budget .budget-label").textContent =
    `Budget: ${trace.token_count} of ${trace.budget_tokens} tokens used (${Math.round(share * 100)}%)`;
  $("#budget .gauge-fill").style.width = `${share * 100}%`;

  const warnings = $("#warnings");
  warnings.replaceChildren(...trace.packet.warnings.map((w) => el("li", { text: w })));

  const pre = $("#rendered");
  pre.textContent = rendered || "(an empty packet: nothing is injected)";
  pre.classList.toggle("empty", !rendered);

  $("#legend").replaceChildren(...legend(ranking, fused));
  const columns = fused
    ? [["similarity", (d) => number(d.similarity)], ["vector rank", (d) => d.vector_rank ?? "—"],
       ["text rank", (d) => d.text_arm_rank ?? "—"]]
    : [["similarity", (d) => number(d.similarity)], ["text rank", (d) => number(d.text_rank)],
       ["recency", (d) => number(d.recency)]];
  $("#decisions thead").replaceChildren(el("tr", {},
    ...["Rank", "Candidate", "Decision", "Score"].map((name, i) => el("th", { class: i === 0 ? "num" : "", text: name })),
    ...columns.map(([name]) => el("th", { class: "num", text: name })),
    el("th", { class: "num", text: "tokens" }), el("th", { class: "num", text: "packed" })));

  const scale = fused ? Math.max(1e-9, ...trace.decisions.map((d) => d.score ?? 0)) : 1;
  const body = $("#decisions tbody");
  body.replaceChildren();
  let packed = 0;
  let previous = null;
  let budgetLineDrawn = false;
  const budgetLine = (text) => el("tr", { class: "budget-line" }, el("td", { colspan: "9", text }));
  for (const decision of trace.decisions) {
    const phase = phaseOf(decision, previous, fused);
    if (!previous || phase !== previous.phase) {
      body.append(el("tr", { class: "phase" }, el("td", { colspan: "9", text: PHASE_TITLES[phase] })));
    }
    if (decision.reason_code === "over_budget" && !budgetLineDrawn) {
      body.append(budgetLine(`Budget line: ${trace.budget_tokens} tokens — ${packed} packed so far, ` +
        `${trace.budget_tokens - packed} left; a candidate below that does not fit is excluded over_budget`));
      budgetLineDrawn = true;
    }
    const id = decision.fact_id ?? decision.event_id;
    const left = trace.budget_tokens - packed;
    if (decision.action === "included") packed += decision.tokens ?? 0;
    const reason = decision.reason_code === "over_budget"
      ? `needs ${decision.tokens} tokens, ${left} left`
      : REASONS[decision.reason_code] ?? "";
    const note = [decision.fact_id ? "fact" : "episode", id.slice(0, 8),
      decision.unconfirmed ? "unconfirmed" : null,
      decision.expanded_from ? `next to ${decision.expanded_from.slice(0, 8)}` : null].filter(Boolean);
    body.append(el("tr", { class: `decision ${decision.action}`, "data-action": decision.action },
      el("td", { class: "num", text: decision.rank ?? "—" }),
      el("td", { class: "candidate" },
        el("span", { class: "label", text: texts[id] ?? "(erased since)" }),
        el("span", { class: "id", text: note.join(" · ") })),
      el("td", { class: "decision" },
        el("span", { class: `badge ${decision.action}`, text: decision.action }),
        el("span", { class: "reason", text: decision.reason_code, title: reason }),
        decision.action === "included" ? null : el("span", { class: "reason", text: reason })),
      el("td", { class: "score" }, scoreBar(decision, ranking, fused, scale)),
      ...columns.map(([, value]) => el("td", { class: "num", text: value(decision) })),
      el("td", { class: "num", text: decision.tokens ?? "—" }),
      el("td", { class: "num", text: decision.action === "included" ? String(packed) : "" })));
    previous = { phase, rank: decision.rank };
  }
  if (!budgetLineDrawn) {
    body.append(budgetLine(`Budget line: ${trace.budget_tokens} tokens — everything that qualified ` +
      `fit (${packed} packed, ${trace.budget_tokens - packed} left)`));
  }
}

// ------------------------------------------------------------------ wiring

async function load() {
  document.body.dataset.ready = "false";
  try {
    const listing = await api("calls?limit=50");
    $("#project").textContent = `project ${listing.project_id}`;
    const params = hashParams();
    let trace = params.get("trace");
    let subject = params.get("subject");
    if (!trace && listing.calls.length > 0) {
      trace = listing.calls[0].trace_id;
      subject = listing.calls[0].subject_id;
    }
    showCalls(listing.calls, trace);
    if (trace) {
      const query = new URLSearchParams({ subject_id: subject ?? "" });
      showCall(await api(`calls/${encodeURIComponent(trace)}?${query}`));
    }
    status(`${listing.calls.length} recent call(s) · read-only`);
  } catch (error) {
    status(`${error.code ?? "error"}: ${error.message}`, true);
    if (error.status === 401 || error.status === 403) {
      sessionStorage.removeItem(KEY_STORE);
      $("#login").hidden = false;
    }
  } finally {
    document.body.dataset.ready = "true";
  }
}

$("#login").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY_STORE, $("#key").value.trim());
  $("#login").hidden = true;
  load();
});
window.addEventListener("hashchange", () => {
  if (hashParams().get("key")) takeKey();
  load();
});

if (takeKey()) {
  load();
} else {
  $("#login").hidden = false;
  status("enter the dev key to read the traces");
  document.body.dataset.ready = "true";
}
