/**
 * TypeScript client of the Haki context assembler API.
 *
 * ```ts
 * import { HakiClient, render } from "haki-client";
 *
 * const haki = new HakiClient({ projectId: "acme-support", failOpen: true }); // HAKI_URL, HAKI_API_KEY
 * const answer = await haki.context({ subject_id: "user-marie", query: "Which language?",
 *                                     purpose: "support_reply", budget_tokens: 400 });
 * const prompt = `${render(answer)}\n\n${userMessage}`;
 * ```
 */

export { DEFAULT_URL, emptyResult, HakiClient, VERSION } from "./client.js";
export type { HakiClientOptions, Logger } from "./client.js";
export { CONFIGURATION_ERROR, CONNECTION_ERROR, HakiError, UNEXPECTED_RESPONSE } from "./errors.js";
export { parseJson, pythonDumps, pythonFloat, RAW_VALUE } from "./json.js";
export { OPERATIONS } from "./operations.js";
export type { Operation, OperationName } from "./operations.js";
export { fixed2, inline, pythonIsoformat, render } from "./render.js";
export type * from "./types.js";
