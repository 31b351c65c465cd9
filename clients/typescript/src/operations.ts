/**
 * The API's operations as data. Adding a route is one entry here (a test compares the table
 * with docs/openapi.json: method, path, query parameters) plus one short method on the client.
 */

export interface Operation {
  readonly method: "GET" | "POST";
  /** Path with `{name}` placeholders, as in the OpenAPI document. */
  readonly path: string;
  /** Query-string parameters the operation takes. */
  readonly query: readonly string[];
  /** Whether it sends a JSON body. */
  readonly body: boolean;
  /** Safe to send again when the first attempt may have reached the service (a timeout, a
   * dropped connection, 502 / 504). Connection failures, 429 and 503 are retried for every
   * operation: the service did no work. */
  readonly idempotent: boolean;
}

export const OPERATIONS = {
  context: { method: "POST", path: "/v1/context", query: [], body: true, idempotent: true },
  inspect: {
    method: "GET", path: "/v1/inspect/{trace_id}", query: ["project_id", "subject_id"],
    body: false, idempotent: true,
  },
  statsOverview: {
    method: "GET", path: "/v1/stats/overview", query: ["project_id", "subject_id"],
    body: false, idempotent: true,
  },
  // The console's reads of past calls, usage over time, and a subject's episodes.
  listCalls: {
    method: "GET", path: "/v1/calls",
    query: ["project_id", "subject_id", "q", "status", "warning", "empty_reason", "purpose",
      "feedback", "since", "until", "cursor", "limit"],
    body: false, idempotent: true,
  },
  call: {
    method: "GET", path: "/v1/calls/{trace_id}", query: ["project_id", "subject_id"],
    body: false, idempotent: true,
  },
  // A repeat from the same source replaces the feedback: safe to send again.
  feedback: {
    method: "POST", path: "/v1/calls/{trace_id}/feedback", query: [], body: true,
    idempotent: true,
  },
  // The calls with feedback as a labelled set (haki eval's format).
  evalSet: {
    method: "GET", path: "/v1/eval-set", query: ["project_id", "since", "until", "limit"],
    body: false, idempotent: true,
  },
  statsSeries: {
    method: "GET", path: "/v1/stats/series",
    query: ["project_id", "subject_id", "days", "granularity"], body: false, idempotent: true,
  },
  listEvents: {
    method: "GET", path: "/v1/events", query: ["project_id", "subject_id", "thread_id", "cursor", "limit"],
    body: false, idempotent: true,
  },
  listSubjects: {
    method: "GET", path: "/v1/subjects", query: ["project_id", "cursor", "limit"],
    body: false, idempotent: true,
  },
  // The writes. Events are idempotent because the client gives every event an idempotency
  // key (a replay returns the stored id); the others may have run when an attempt times out.
  writeEvents: { method: "POST", path: "/v1/events", query: [], body: true, idempotent: true },
  writeFacts: { method: "POST", path: "/v1/facts", query: [], body: true, idempotent: false },
  listFacts: {
    method: "GET", path: "/v1/facts",
    query: ["project_id", "subject_id", "status", "predicate", "cursor", "limit"],
    body: false, idempotent: true,
  },
  setFactStatus: {
    method: "POST", path: "/v1/facts/{fact_id}/status", query: [], body: true, idempotent: false,
  },
  listConflicts: {
    method: "GET", path: "/v1/conflicts",
    query: ["project_id", "subject_id", "status", "cursor", "limit"], body: false, idempotent: true,
  },
  resolveConflict: {
    method: "POST", path: "/v1/conflicts/{conflict_id}/resolve", query: [], body: true,
    idempotent: false,
  },
  forget: { method: "POST", path: "/v1/forget", query: [], body: true, idempotent: false },
  // The health checks (no key needed; the client sends its own anyway, unread).
  health: { method: "GET", path: "/v1/health", query: [], body: false, idempotent: true },
  ready: { method: "GET", path: "/v1/health/ready", query: [], body: false, idempotent: true },
} as const satisfies Record<string, Operation>;

export type OperationName = keyof typeof OPERATIONS;
