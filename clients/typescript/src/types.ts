/** The API's types, taken from the schema generated from docs/openapi.json (src/schema.d.ts,
 * `npm run generate`; a test fails when the committed file is not what the document gives). */

import type { components, paths } from "./schema.js";

type Schemas = components["schemas"];

/** What `context()` sends: `budget_tokens` and `render` have the service's defaults (900 and
 * false; `render: true` asks for the prompt-ready block, the answer's `block`). */
export type ContextRequest = Defaulted<Schemas["ContextRequest"], "budget_tokens" | "render">;
export type ContextResponse = Schemas["ContextResponse"];
export type ContextPacket = Schemas["ContextPacket"];
export type PacketFact = Schemas["PacketFact"];
export type PacketEpisode = Schemas["PacketEpisode"];
export type InspectResponse = Schemas["InspectResponse"];
export type TraceDecision = Schemas["TraceDecision"];
export type StatsOverview = Schemas["StatsOverview"];
export type DayCount = Schemas["DayCount"];
export type ErrorBody = Schemas["Error"];
export type StatsSeries = Schemas["StatsSeries"];
export type SeriesPoint = Schemas["SeriesPoint"];
export type CallSummary = Schemas["CallSummary"];
export type CallPage = Schemas["CallPage"];
export type CallDetail = Schemas["CallDetail"];
/** Feedback on a call: `used` and `missing` ids (default none), `source` "agent" by default. */
export type FeedbackRequest = Defaulted<Schemas["FeedbackRequest"], "source">;
export type CallFeedback = Schemas["CallFeedback"];
export type EvalSet = Schemas["EvalSet"];
/** What `evalSet()` exports; `since` and `until` also take a `Date`. */
export type EvalSetQuery = Omit<NonNullable<paths["/v1/eval-set"]["get"]["parameters"]["query"]>,
  "since" | "until" | "project_id"> & { since?: string | Date | null; until?: string | Date | null;
  project_id?: string };
export type EventView = Schemas["EventView"];
export type EventPage = Schemas["EventPage"];
export type SubjectView = Schemas["SubjectView"];
export type SubjectPage = Schemas["SubjectPage"];

export type EventIn = Schemas["EventIn"];
export type EventsRequest = Schemas["EventsRequest"];
/** A message of a conversation: `role` and `content`; optionally `name` (the speaker),
 * `occurred_at`, and `message_id` (the caller's id of it) or `id` (a UUID). */
export type MessageIn = Schemas["MessageIn"];
export type EventWritten = Schemas["EventWritten"];
export type EventsResponse = Schemas["EventsResponse"];
/** A fact to record: `status` and `volatility` have the service's defaults ("active" and
 * "stable"). */
export type FactIn = Defaulted<Schemas["FactIn"], "status" | "volatility">;
export type FactsRequest = Omit<Schemas["FactsRequest"], "facts"> & { facts: FactIn[] };
export type FactWritten = Schemas["FactWritten"];
export type FactsResponse = Schemas["FactsResponse"];
export type FactView = Schemas["FactView"];
export type FactPage = Schemas["FactPage"];
export type FactStatusRequest = Schemas["FactStatusRequest"];
export type FactStatusResponse = Schemas["FactStatusResponse"];
export type ConflictView = Schemas["ConflictView"];
export type ConflictPage = Schemas["ConflictPage"];
export type ResolveRequest = Schemas["ResolveRequest"];
export type ResolveResponse = Schemas["ResolveResponse"];
export type ForgetRequest = Schemas["ForgetRequest"];
export type ForgetResponse = Schemas["ForgetResponse"];
export type Health = Schemas["Health"];

export type InspectQuery = paths["/v1/inspect/{trace_id}"]["get"]["parameters"]["query"];
export type StatsQuery = paths["/v1/stats/overview"]["get"]["parameters"]["query"];
export type FactsQuery = NonNullable<paths["/v1/facts"]["get"]["parameters"]["query"]>;
export type ConflictsQuery = NonNullable<paths["/v1/conflicts"]["get"]["parameters"]["query"]>;
export type SeriesQuery = NonNullable<paths["/v1/stats/series"]["get"]["parameters"]["query"]>;
/** What `listCalls()` filters by; `since` and `until` also take a `Date`. */
export type CallsQuery = Omit<NonNullable<paths["/v1/calls"]["get"]["parameters"]["query"]>,
  "since" | "until"> & { since?: string | Date | null; until?: string | Date | null };
export type CallQuery = paths["/v1/calls/{trace_id}"]["get"]["parameters"]["query"];
export type EventsQuery = NonNullable<paths["/v1/events"]["get"]["parameters"]["query"]>;
export type SubjectsQuery = NonNullable<paths["/v1/subjects"]["get"]["parameters"]["query"]>;
/** A fact's lifecycle status, a conflict set's, and what `forget()` does. */
export type FactStatus = FactStatusRequest["status"];
export type ConflictStatus = ConflictView["status"];
export type ForgetMode = ForgetRequest["mode"];

/** What every method takes last: `timeoutMs` bounds each attempt of this call alone (the
 * client's `timeoutMs` otherwise). */
export interface CallOptions {
  timeoutMs?: number;
}

/** What `context()` resolves to: the service's answer, or — for a client created with
 * `failOpen: true` when the service is down — an empty packet with `trace_id: null` and
 * `served: false`. */
export type ContextResult = Omit<ContextResponse, "trace_id"> & {
  trace_id: string | null;
  served: boolean;
};

/** `T` with the fields `K` optional: the service gives them a default. */
export type Defaulted<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** A request made in the key's project unless it says otherwise (the service serves a
 * request without `project_id` in the key's project). */
export type InProject<T extends { project_id?: string | null }> = Omit<T, "project_id"> & {
  project_id?: string;
};
