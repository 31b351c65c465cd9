/** The one error the client throws. */

/** Codes the client uses itself when the service gave no usable answer; every other code is
 * the service's stable error code (docs/api.md, "Errors"). */
export const CONNECTION_ERROR = "connection_error";
export const UNEXPECTED_RESPONSE = "unexpected_response";
export const CONFIGURATION_ERROR = "configuration_error";

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
    this.name = "HakiError";
    this.code = code;
    this.status = status;
    this.requestId = requestId;
  }
}
