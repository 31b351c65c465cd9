/**
 * TypeScript client of the Haki context assembler API.
 *
 * ```ts
 * import { HakiClient, render } from "haki-client";
 *
 * const haki = new HakiClient({ projectId: "acme-support", failOpen: true }); // HAKI_URL, HAKI_API_KEY
 * const answer = await haki.context({ subject_id: "user-marie", query: "Which language?",
 *                                     purpose: "support_reply", budget_tokens: 400,
 *                                     render: true });
 * const prompt = `${render(answer)}\n\n${userMessage}`; // the service's <haki_memory> block
 * ```
 */

export {
  DEFAULT_PURPOSE, DEFAULT_URL, emptyResult, HakiClient, MAX_BUDGET_TOKENS, render, VERSION,
} from "./client.js";
export type { HakiClientOptions, Logger } from "./client.js";
export {
  APIConnectionError, APITimeoutError, AuthenticationError, BadRequestError, CONFIGURATION_ERROR,
  ConfigurationError, ConflictError, CONNECTION_ERROR, HakiError, NotFoundError,
  PermissionDeniedError, RateLimitError, ServerError, UNEXPECTED_RESPONSE,
  UnexpectedResponseError, VALIDATION_ERROR, ValidationError,
} from "./errors.js";
export { citedIds, handles, resolveRefs } from "./handles.js";
export { OPERATIONS } from "./operations.js";
export type { Operation, OperationName } from "./operations.js";
export type * from "./types.js";
