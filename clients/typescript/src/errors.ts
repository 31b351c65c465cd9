/**
 * The errors the client throws: {@link HakiError}, and one subclass per family of answers, so
 * that a caller catches what it can act on (`error instanceof RateLimitError`) and reads the
 * service's stable `code` for the detail. The classes and their statuses are the Python SDK's:
 *
 * | class                     | status | e.g. `code`                                          |
 * |---------------------------|--------|------------------------------------------------------|
 * | `BadRequestError`         | 4xx    | `payload_too_large` (413), any other refused request |
 * | `AuthenticationError`     | 401    | `unauthorized`                                       |
 * | `PermissionDeniedError`   | 403    | `forbidden_scope`                                    |
 * | `NotFoundError`           | 404    | `trace_not_found`, `fact_not_found`                  |
 * | `ConflictError`           | 409    | `conflict_not_open`, `stale_supersedes`              |
 * | `ValidationError`         | 422    | `validation_error`, `missing_scope`, `budget_exceeded` |
 * | `RateLimitError`          | 429    | `too_many_requests`                                  |
 * | `ServerError`             | 5xx    | `service_unavailable`, `internal_error`              |
 * | `APIConnectionError`      | none   | `connection_error`: not reached, after the retries   |
 * | `APITimeoutError`         | none   | `connection_error`: no answer in time                |
 * | `UnexpectedResponseError` | any    | `unexpected_response`: not the API's JSON            |
 * | `ConfigurationError`      | none   | `configuration_error`: no API key                    |
 */

/** Codes the client uses itself when the service gave no usable answer; every other code is
 * the service's stable error code (docs/api.md, "Errors"). */
export const CONNECTION_ERROR = "connection_error";
export const UNEXPECTED_RESPONSE = "unexpected_response";
export const CONFIGURATION_ERROR = "configuration_error";
/** A request the client refuses before sending it (the service's own code for the mistake). */
export const VALIDATION_ERROR = "validation_error";

/**
 * An error answer of the service, or no answer at all.
 *
 * `code` is the service's stable error code (`unauthorized`, `forbidden_scope`,
 * `trace_not_found`, `missing_scope`, `budget_exceeded`, `validation_error`,
 * `service_unavailable`, …) or one of the client's own: `connection_error` (not reached, or no
 * answer in time, after the retries), `unexpected_response` (not the API's JSON) and
 * `configuration_error` (no API key). `status` is the HTTP status (`null` without an answer),
 * `requestId` the service's `x-amzn-RequestId`.
 */
export class HakiError extends Error {
  readonly code: string;
  readonly status: number | null;
  readonly requestId: string | null;

  constructor(code: string, message: string, status: number | null = null,
              requestId: string | null = null) {
    super(`${code}: ${message}`);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.requestId = requestId;
  }
}

/** A request the service refused (a 4xx without a family of its own below). */
export class BadRequestError extends HakiError {}

/** 401: the API key is missing, unknown or revoked. */
export class AuthenticationError extends BadRequestError {}

/** 403: the key may not act on this project. */
export class PermissionDeniedError extends BadRequestError {}

/** 404: no such trace, fact or conflict in this scope. */
export class NotFoundError extends BadRequestError {}

/** 409: the request contradicts the stored state (a conflict no longer open, a stale
 * `supersedes_id`, …). */
export class ConflictError extends BadRequestError {}

/** 422: a field out of bounds, a missing scope, a budget too large. */
export class ValidationError extends BadRequestError {}

/** 429: throttled, after the retries. */
export class RateLimitError extends HakiError {}

/** 5xx: the service or the memory store failed, after the retries for what is retried. */
export class ServerError extends HakiError {}

/** No answer: the service could not be reached, or the connection dropped. */
export class APIConnectionError extends HakiError {}

/** No answer within `timeoutMs`. */
export class APITimeoutError extends APIConnectionError {}

/** An answer that is not the API's JSON (e.g. a proxy's HTML error page). */
export class UnexpectedResponseError extends HakiError {}

/** The client cannot be built as configured (no API key). */
export class ConfigurationError extends HakiError {}

/** The family of each status the API answers with a class of its own. */
const BY_STATUS: Readonly<Record<number, typeof HakiError>> = {
  401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
  409: ConflictError, 422: ValidationError, 429: RateLimitError,
};

/** The error of an answer with `status`: its class by status family. */
export function errorFor(code: string, message: string, status: number,
                         requestId: string | null = null): HakiError {
  let cls: typeof HakiError = HakiError;
  if (code === UNEXPECTED_RESPONSE) cls = UnexpectedResponseError;
  else if (BY_STATUS[status] !== undefined) cls = BY_STATUS[status];
  else if (status >= 500) cls = ServerError;
  else if (status >= 400) cls = BadRequestError;
  return new cls(code, message, status, requestId);
}
