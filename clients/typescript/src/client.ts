/**
 * The fetch-based client of the Haki API.
 *
 * Retries: up to `maxRetries` more attempts, after a "full jitter" exponential backoff (a
 * uniform draw in [0, min(maxBackoffMs, backoffMs × 2^attempt)], at least what a
 * `Retry-After` header asks, capped at `maxBackoffMs`), on a connection that could not be
 * made, on 429 and 503, and — for idempotent operations only — on a timeout, a dropped
 * connection, 502 and 504. Never on any other 4xx.
 *
 * With `failOpen: true`, `context()` resolves to an empty packet (its block, when asked, "")
 * and logs a warning when the service cannot be reached or answers 5xx / 429 after the retries; every
 * other call, and every 4xx, throws {@link HakiError} (a subclass per status family: errors.ts).
 */

import {
  APIConnectionError, APITimeoutError, CONFIGURATION_ERROR, ConfigurationError, CONNECTION_ERROR,
  errorFor, HakiError, UNEXPECTED_RESPONSE, VALIDATION_ERROR, ValidationError,
} from "./errors.js";
import { type Operation, OPERATIONS } from "./operations.js";
import type {
  CallDetail, CallFeedback, CallOptions, CallPage, CallQuery, CallsQuery, ConflictPage,
  ConflictsQuery, ContextRequest, ContextResponse, ContextResult, EvalSet, EvalSetQuery,
  EventIn, EventPage, EventsQuery, EventsResponse, EventWritten, FactIn, FactPage, FactsQuery,
  FactsResponse, FactStatus, FactStatusResponse, FactWritten, FeedbackRequest, ForgetRequest,
  ForgetResponse, Health, InProject, InspectQuery, InspectResponse, MessageIn,
  ResolveResponse, SeriesQuery, StatsOverview, StatsQuery, StatsSeries, SubjectPage,
  SubjectsQuery,
} from "./types.js";

export const VERSION = "0.1.0";
export const DEFAULT_URL = "http://127.0.0.1:8787";
/** The purpose a context call names unless told otherwise: a call without one is answered,
 * but its packet warns `missing_purpose` and reads "degraded". `purpose: null` sends none. */
export const DEFAULT_PURPOSE = "agent_context";
/** The largest `budget_tokens` the service takes. */
export const MAX_BUDGET_TOKENS = 100_000;

export interface Logger {
  warn(message: string): void;
}

export interface HakiClientOptions {
  /** Default: `HAKI_URL`, else http://127.0.0.1:8787. */
  url?: string;
  /** Default: `HAKI_API_KEY`; required. An empty string is an error, not the environment's. */
  apiKey?: string;
  /** The key's project, used when a call names none. Default: `HAKI_PROJECT_ID`. */
  projectId?: string;
  /** Per attempt, in ms (default 10,000); each method's last argument may set its own. */
  timeoutMs?: number;
  /** More attempts after the first (default 2). */
  maxRetries?: number;
  /** Backoff base and cap, in ms (default 200 and 2,000). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** `context()` resolves to an empty packet when the service is down (default false). */
  failOpen?: boolean;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** Where the fail-open warning goes (default: console). */
  logger?: Logger;
}

const RETRY_ALWAYS = new Set([429, 503]);
const RETRY_IF_IDEMPOTENT = new Set([502, 504]);
/** Error codes of Node's fetch (undici) when no connection was made: nothing was sent. */
const NOT_SENT = new Set([
  "ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

function env(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } })
    .process;
  return process?.env?.[name] || undefined;
}

/** A random UUID (Web Crypto: Node ≥ 19, browsers, Deno, Bun). */
function randomId(): string {
  return globalThis.crypto.randomUUID();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The empty packet a fail-open client resolves to when the service is down (its block, when
 * asked, is ""). */
export function emptyResult(reason: string, render = false): ContextResult {
  return {
    packet: {
      facts: [], episodes: [], status: "degraded", empty_reason: null,
      warnings: [`haki_unavailable: ${reason}; no memory was served (fail_open)`],
    },
    token_count: 0, trace_id: null, served: false, ...(render ? { block: "" } : {}),
  };
}

/** The `<haki_memory>` block of an answer to `context({ ..., render: true })`, as the service
 * rendered it (`answer.block`); "" for an empty packet. */
export function render(answer: ContextResult): string {
  if (typeof answer?.block !== "string") {
    throw new TypeError("this answer has no block: ask for it with context({ ..., render: true })");
  }
  return answer.block;
}

type Attempt =
  | { kind: "answer"; response: Response; text: string }
  | { kind: "failure"; error: unknown; sent: boolean; timedOut: boolean };

export class HakiClient {
  readonly url: string;
  readonly projectId: string | undefined;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly failOpen: boolean;
  private readonly fetchImpl: typeof fetch;
  private readonly logger: Logger;

  constructor(options: HakiClientOptions = {}) {
    this.url = (options.url ?? env("HAKI_URL") ?? DEFAULT_URL).replace(/\/+$/, "");
    if (options.apiKey !== undefined && !options.apiKey.trim()) {
      throw new ConfigurationError(CONFIGURATION_ERROR, "apiKey is empty: pass the project's hk_ key");
    }
    const key = options.apiKey ?? env("HAKI_API_KEY");
    if (!key) throw new ConfigurationError(CONFIGURATION_ERROR, "no API key: pass apiKey or set HAKI_API_KEY");
    this.apiKey = key;
    this.projectId = options.projectId ?? env("HAKI_PROJECT_ID");
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxRetries = options.maxRetries ?? 2;
    if (this.maxRetries < 0) throw new RangeError("maxRetries must be >= 0");
    this.backoffMs = options.backoffMs ?? 200;
    this.maxBackoffMs = options.maxBackoffMs ?? 2_000;
    this.failOpen = options.failOpen ?? false;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.logger = options.logger ?? console;
  }

  // ------------------------------------------------------------------ routes

  /** `POST /v1/context`: the packet for a subject and a query; with `render: true` also the
   * prompt-ready `<haki_memory>` block (`answer.block`, or {@link render}). `budget_tokens`
   * bounds that block, tags and headers included, whether or not it is asked for;
   * `thread_id` narrows the episodes to one conversation thread (facts stay the subject's). */
  async context(request: InProject<ContextRequest>, options: CallOptions = {}): Promise<ContextResult> {
    // `render` is sent only when asked: a request without it is what it always was.
    const { render: asked, purpose, ...rest } = request;
    checkBudget(request.budget_tokens);
    try {
      const answer = await this.call<ContextResponse>(OPERATIONS.context, {
        body: {
          ...rest, project_id: request.project_id ?? this.projectId,
          purpose: purpose === undefined ? DEFAULT_PURPOSE : purpose,
          ...(asked ? { render: true } : {}),
        },
      }, options);
      return { ...answer, served: true };
    } catch (error) {
      if (error instanceof HakiError && this.failsOpen(error)) {
        this.logger.warn(`haki: ${error.code} (status ${error.status}); serving an empty packet (fail_open)`);
        return emptyResult(error.code, asked === true);
      }
      throw error;
    }
  }

  /** `GET /v1/inspect/{trace_id}`: the call and every decision of its trace (`subject_id`
   * is optional: trace ids are unique; given, it must be the call's). */
  inspect(traceId: string, query: InProject<NonNullable<InspectQuery>> = {},
          options: CallOptions = {}): Promise<InspectResponse> {
    return this.call(OPERATIONS.inspect, {
      path: { trace_id: traceId }, query: this.inProject(query),
    }, options);
  }

  /** `GET /v1/stats/overview`: usage figures of the project (or one subject). */
  statsOverview(query: Partial<NonNullable<StatsQuery>> = {},
                options: CallOptions = {}): Promise<StatsOverview> {
    return this.call(OPERATIONS.statsOverview, { query: this.inProject(query) }, options);
  }

  /** `GET /v1/stats/series`: calls, injection rate, latency and tokens per hour or day over
   * the last `days` (the service's defaults: 7, "hour"). */
  statsSeries(query: Partial<SeriesQuery> = {}, options: CallOptions = {}): Promise<StatsSeries> {
    return this.call(OPERATIONS.statsSeries, { query: this.inProject(query) }, options);
  }

  /** `GET /v1/calls`: a page of past context calls, newest first, filtered by subject, text
   * (`q`), status, warning, empty reason, purpose and time (`since`, `until`: a `Date` or ISO
   * 8601 text with a time zone); pass `next_cursor` on as `cursor`. */
  listCalls(query: Partial<CallsQuery> = {}, options: CallOptions = {}): Promise<CallPage> {
    const { since, until, ...rest } = query;
    return this.call(OPERATIONS.listCalls, {
      query: this.inProject({ ...rest, since: iso(since), until: iso(until) }),
    }, options);
  }

  /** `GET /v1/calls/{trace_id}`: one call's trace, ranking, the current text of each
   * candidate and the rendered block. */
  getCall(traceId: string, query: InProject<NonNullable<CallQuery>> = {},
          options: CallOptions = {}): Promise<CallDetail> {
    return this.call(OPERATIONS.call, { path: { trace_id: traceId }, query: this.inProject(query) },
      options);
  }

  /** `POST /v1/calls/{trace_id}/feedback`: which served items the answer `used` and which of
   * the subject's facts or events were `missing` (ids; `citedIds` maps the handles a model
   * cites). A repeat from the same `source` replaces. */
  feedback(traceId: string, request: InProject<FeedbackRequest>): Promise<CallFeedback> {
    return this.call(OPERATIONS.feedback, {
      path: { trace_id: traceId },
      body: { ...request, project_id: request.project_id ?? this.projectId },
    });
  }

  /** `GET /v1/eval-set`: the project's calls with feedback as a labelled set (write it as
   * JSON and run `haki eval` on it). */
  evalSet(query: EvalSetQuery = {}): Promise<EvalSet> {
    const { since, until, ...rest } = query;
    return this.call(OPERATIONS.evalSet, {
      query: this.inProject({ ...rest, since: iso(since), until: iso(until) }),
    });
  }

  /** `GET /v1/events`: a page of the subject's episodes (of one thread, with `thread_id`),
   * newest first, those of one time in the order written; pass `next_cursor` on. */
  listEvents(query: InProject<EventsQuery>, options: CallOptions = {}): Promise<EventPage> {
    return this.call(OPERATIONS.listEvents, { query: this.inProject(query) }, options);
  }

  /** `GET /v1/subjects`: a page of the project's subjects (by id, each with its counts and
   * last activity); pass `next_cursor` on. */
  listSubjects(query: Partial<SubjectsQuery> = {}, options: CallOptions = {}): Promise<SubjectPage> {
    return this.call(OPERATIONS.listSubjects, { query: this.inProject(query) }, options);
  }

  /** `POST /v1/events`: store 1 to 100 episodes. An event without `id` or
   * `idempotency_key` gets a key of its own, so a retried batch is never stored twice. */
  writeEvents(events: EventIn[], projectId?: string, options: CallOptions = {}): Promise<EventsResponse> {
    const keyed = events.map((e) => (e.id != null || e.idempotency_key != null
      ? e : { ...e, idempotency_key: `haki-client-${randomId()}` }));
    return this.call(OPERATIONS.writeEvents, {
      body: { project_id: projectId ?? this.projectId, events: keyed },
    }, options);
  }

  /** One episode; `text` goes in `payload.text`. */
  async rememberEvent(event: Omit<EventIn, "payload"> & { text?: string; payload?: Record<string, unknown> },
                      projectId?: string, options: CallOptions = {}): Promise<EventWritten> {
    const { text, payload, ...rest } = event;
    const body: EventIn = { ...rest, payload: { ...(payload ?? {}), ...(text !== undefined ? { text } : {}) } };
    const written = await this.writeEvents([body], projectId, options);
    return written.events[0] as EventWritten;
  }

  /** `POST /v1/events` with `messages`: a turn or a whole conversation of `subjectId` (of one
   * thread with `options.threadId`), 1 to 100 messages, each stored as a
   * `conversation.message` event and read back in the order listed; one entry per message in
   * the answer, in order.
   *
   * Idempotent per message: give each one a `message_id` (your id of it, unique in the
   * subject) or an `id` (a UUID), and a retry, even a later one, answers `deduplicated` with
   * the same ids. A message without either is keyed by its speaker, content and `occurred_at`
   * (now when not given, so only this call's own retries are recognised: writing it again
   * later stores it again). */
  writeMessages(subjectId: string, messages: MessageIn[],
                options: { projectId?: string; threadId?: string } & CallOptions = {}): Promise<EventsResponse> {
    const now = Date.now();
    // Dated a millisecond apart, so that the conversation keeps its order.
    const dated = messages.map((m, i) => (m.id != null || m.message_id != null || m.occurred_at != null
      ? m : { ...m, occurred_at: new Date(now + i).toISOString() }));
    return this.call(OPERATIONS.writeEvents, {
      body: {
        project_id: options.projectId ?? this.projectId, subject_id: subjectId,
        ...(options.threadId !== undefined ? { thread_id: options.threadId } : {}), messages: dated,
      },
    }, options);
  }

  /** `POST /v1/facts`: record 1 to 100 facts (created, reinforced, superseded or put in
   * conflict, by the service's rules). */
  writeFacts(facts: FactIn[], projectId?: string, options: CallOptions = {}): Promise<FactsResponse> {
    return this.call(OPERATIONS.writeFacts, {
      body: { project_id: projectId ?? this.projectId, facts },
    }, options);
  }

  async recordFact(fact: FactIn, projectId?: string, options: CallOptions = {}): Promise<FactWritten> {
    return (await this.writeFacts([fact], projectId, options)).facts[0] as FactWritten;
  }

  /** `GET /v1/facts`: a page of the subject's facts (`status`: a {@link FactStatus}); pass
   * `next_cursor` on. */
  listFacts(query: InProject<FactsQuery>, options: CallOptions = {}): Promise<FactPage> {
    return this.call(OPERATIONS.listFacts, { query: this.inProject(query) }, options);
  }

  /** `POST /v1/facts/{fact_id}/status`: move a fact along its lifecycle. */
  setFactStatus(factId: string, status: FactStatus, projectId?: string,
                options: CallOptions = {}): Promise<FactStatusResponse> {
    return this.call(OPERATIONS.setFactStatus, {
      path: { fact_id: factId }, body: { project_id: projectId ?? this.projectId, status },
    }, options);
  }

  /** `GET /v1/conflicts`: a page of conflict sets. */
  listConflicts(query: Partial<ConflictsQuery> = {}, options: CallOptions = {}): Promise<ConflictPage> {
    return this.call(OPERATIONS.listConflicts, { query: this.inProject(query) }, options);
  }

  /** `POST /v1/conflicts/{conflict_id}/resolve`: keep one fact, supersede the rest. */
  resolveConflict(conflictId: string, keepFactId: string, projectId?: string,
                  options: CallOptions = {}): Promise<ResolveResponse> {
    return this.call(OPERATIONS.resolveConflict, {
      path: { conflict_id: conflictId },
      body: { project_id: projectId ?? this.projectId, keep_fact_id: keepFactId },
    }, options);
  }

  /** `POST /v1/forget`: a subject or one fact; `mode` (a {@link ForgetMode}): `disable`
   * (reversible), `enable` (undoes it) or `delete` (erasure, with a receipt). */
  forget(request: InProject<ForgetRequest>, options: CallOptions = {}): Promise<ForgetResponse> {
    return this.call(OPERATIONS.forget, {
      body: { ...request, project_id: request.project_id ?? this.projectId },
    }, options);
  }

  /** `GET /v1/health` (the API answers), or with `{ ready: true }` `GET /v1/health/ready`
   * (it reaches its database; a 503 rejects with a `HakiError`). */
  health(check: { ready?: boolean } = {}, options: CallOptions = {}): Promise<Health> {
    return this.call(check.ready ? OPERATIONS.ready : OPERATIONS.health, {}, options);
  }

  private inProject<T extends { project_id?: string | null }>(query: T): Record<string, string | undefined> {
    const out: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries({ ...query, project_id: query.project_id ?? this.projectId })) {
      if (value !== undefined && value !== null) out[name] = String(value);
    }
    return out;
  }

  // ------------------------------------------------------------------ policy

  /** Milliseconds before attempt `attempt + 1`: full jitter, at least `retryAfterMs`. */
  delay(attempt: number, retryAfterMs = 0): number {
    const ceiling = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
    return Math.min(this.maxBackoffMs, Math.max(retryAfterMs, Math.random() * ceiling));
  }

  private failsOpen(error: HakiError): boolean {
    if (!this.failOpen) return false;
    if (error.code === CONNECTION_ERROR) return true;
    return error.status !== null && (error.status >= 500 || error.status === 429);
  }

  // ------------------------------------------------------------------ transport

  private async call<T>(op: Operation, parts: {
    path?: Record<string, string>;
    query?: Record<string, string | null | undefined>;
    body?: Record<string, unknown>;
  }, options: CallOptions = {}): Promise<T> {
    let target = op.path.replace(/\{(\w+)\}/g,
      (_, name: string) => encodeURIComponent(parts.path?.[name] ?? ""));
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(parts.query ?? {})) {
      if (value !== undefined && value !== null) params.set(name, String(value));
    }
    const search = params.toString();
    if (search) target += `?${search}`;
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.apiKey}`,
      Accept: "application/json",
      "User-Agent": `haki-client-typescript/${VERSION}`,
    };
    let body: string | undefined;
    if (parts.body !== undefined) {
      body = JSON.stringify(Object.fromEntries(
        Object.entries(parts.body).filter(([, v]) => v !== undefined && v !== null)));
      headers["Content-Type"] = "application/json";
    }
    for (let attempt = 0; ; attempt += 1) {
      const outcome = await this.attempt(op, this.url + target, headers, body,
        options.timeoutMs ?? this.timeoutMs);
      const last = attempt >= this.maxRetries;
      if (outcome.kind === "failure") {
        if (last || (outcome.sent && !op.idempotent)) {
          const what = outcome.timedOut ? "timed out" : "failed";
          const cls = outcome.timedOut ? APITimeoutError : APIConnectionError;
          throw new cls(CONNECTION_ERROR,
            `request to ${this.url} ${what} after ${attempt + 1} attempt(s): ${describe(outcome.error)}`);
        }
        await sleep(this.delay(attempt));
        continue;
      }
      const status = outcome.response.status;
      const retryable = RETRY_ALWAYS.has(status) || (op.idempotent && RETRY_IF_IDEMPOTENT.has(status));
      if (retryable && !last) {
        await sleep(this.delay(attempt, retryAfterMs(outcome.response)));
        continue;
      }
      return answer<T>(outcome.response, outcome.text);
    }
  }

  private async attempt(op: Operation, url: string, headers: Record<string, string>,
                        body: string | undefined, timeoutMs: number): Promise<Attempt> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; controller.abort(); }, timeoutMs);
    try {
      const init: RequestInit = { method: op.method, headers, signal: controller.signal };
      if (body !== undefined) init.body = body;
      const response = await this.fetchImpl(url, init);
      const text = await response.text();
      return { kind: "answer", response, text };
    } catch (error) {
      const code = causeCode(error);
      return { kind: "failure", error, sent: timedOut || !NOT_SENT.has(code ?? ""), timedOut };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A budget the service would refuse (not a whole number from 1 to the maximum) is the
 * caller's mistake: refused before any request, naming the value. */
function checkBudget(budget: unknown): void {
  if (budget === undefined) return;
  if (typeof budget !== "number" || !Number.isInteger(budget) || budget < 1 || budget > MAX_BUDGET_TOKENS) {
    throw new ValidationError(VALIDATION_ERROR,
      `budget_tokens must be a whole number of tokens from 1 to 100,000, not ${JSON.stringify(budget)}`);
  }
}

/** A moment as the service reads it: ISO 8601 (`String()` of a Date is not). */
function iso(value: string | Date | null | undefined): string | null | undefined {
  return value instanceof Date ? value.toISOString() : value;
}

function causeCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === "string" ? cause.code : undefined;
}

function describe(error: unknown): string {
  const code = causeCode(error);
  const name = error instanceof Error ? error.name : typeof error;
  return code ? `${name} (${code})` : name;
}

function retryAfterMs(response: Response): number {
  const seconds = Number(response.headers.get("Retry-After") ?? "");
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

function answer<T>(response: Response, text: string): T {
  const status = response.status;
  const requestId = response.headers.get("x-amzn-RequestId");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw errorFor(UNEXPECTED_RESPONSE, `HTTP ${status} answer is not JSON`, status, requestId);
  }
  if (status >= 200 && status < 300) return parsed as T;
  const error = (parsed as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (typeof error?.code !== "string" || typeof error.message !== "string") {
    throw errorFor(UNEXPECTED_RESPONSE, `HTTP ${status} without the API's error body`, status, requestId);
  }
  throw errorFor(error.code, error.message, status, requestId);
}
