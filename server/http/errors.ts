// One error type for business failures, and the mapping of every error to the caller's format:
// management calls get the {success,message} envelope; relay calls get OpenAI, Claude or Gemini bodies.
import { isDatabaseUnavailable } from "../../db/timeouts.ts";
import { CacheUnavailableError } from "../infra/cache.ts";

export class AppError extends Error {
  /** Response headers the error carries (Retry-After on a 429), in every error format. */
  headers?: Record<string, string>;
  constructor(
    public status: number,
    message: string,
    public code?: string,
  ) {
    super(message);
  }
}

export const badRequest = (m: string) => new AppError(400, m);
export const unauthorized = (m = "not logged in or login expired") => new AppError(401, m);
export const forbidden = (m = "no permission to perform this operation") => new AppError(403, m);
export const notFound = (m = "not found") => new AppError(404, m);

export const DATABASE_UNAVAILABLE_MESSAGE = "the database is unavailable, please try again shortly";
export const CACHE_UNAVAILABLE_MESSAGE = "the shared cache (Redis) is unavailable, please try again shortly";

function isCacheUnavailable(e: unknown): boolean {
  return e instanceof CacheUnavailableError || (e as { cause?: unknown })?.cause instanceof CacheUnavailableError;
}

export type ErrorFormat = "envelope" | "openai" | "claude" | "gemini";

export function errorFormatFor(path: string): ErrorFormat {
  if (path.startsWith("/v1beta/") || (path.startsWith("/v1/models/") && path.includes(":"))) return "gemini";
  if (path === "/v1/messages" || path.startsWith("/v1/messages/")) return "claude";
  if (
    path.startsWith("/v1/")
    || path === "/v1"
    || path.startsWith("/pg/")
    || path.startsWith("/mj/")
    || path.startsWith("/suno/")
  )
    return "openai";
  if (path.startsWith("/dashboard/billing/")) return "openai";
  return "envelope";
}

const GEMINI_STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  413: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

const CLAUDE_TYPE: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  503: "overloaded_error",
  529: "overloaded_error",
};

/** The error body for a status and message in the given wire format. */
export function errorBody(format: ErrorFormat, status: number, message: string, code?: string): unknown {
  switch (format) {
    case "openai":
      return {
        error: {
          message,
          type: status >= 500 ? "server_error" : "invalid_request_error",
          param: null,
          code: code ?? null,
        },
      };
    case "claude":
      return {
        type: "error",
        error: { type: CLAUDE_TYPE[status] ?? (status >= 500 ? "api_error" : "invalid_request_error"), message },
      };
    case "gemini":
      return {
        error: {
          code: status,
          message,
          status: GEMINI_STATUS[status] ?? (status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT"),
        },
      };
    default:
      // new-api's console reads a few codes (VERIFICATION_REQUIRED) beside the message.
      return code ? { success: false, message, code } : { success: false, message };
  }
}

export function errorResponse(path: string, status: number, message: string, code?: string): Response {
  return Response.json(errorBody(errorFormatFor(path), status, message, code), { status });
}

/** During an outage every call fails the same way: one line a second says so, with how many it stands for. */
let unavailableLoggedAt = -Infinity;
let unavailableSince = 0;
function logUnavailable(line: string): void {
  const now = performance.now();
  if (now - unavailableLoggedAt < 1000) {
    unavailableSince++;
    return;
  }
  console.error(unavailableSince > 0 ? `${line} (and ${unavailableSince} more answered 503)` : line);
  unavailableLoggedAt = now;
  unavailableSince = 0;
}

function validationMessage(error: any): string {
  const first = error?.all?.[0];
  if (!first) return "invalid parameter";
  const path = String(first.path ?? "")
    .replace(/^\//, "")
    .replace(/\//g, ".");
  const schema = first.schema ?? {};
  if (typeof schema.error === "string") return schema.error;
  if (/missing/i.test(first.summary ?? "")) return `invalid parameter ${path}: it is required`;
  // Elysia models t.Integer/t.Numeric as a union; describe the first member instead of the union.
  const member = schema.anyOf?.[0] ?? schema;
  const bounds = [
    member.minimum !== undefined && `minimum ${member.minimum}`,
    member.maximum !== undefined && `maximum ${member.maximum}`,
    member.minLength !== undefined && `at least ${member.minLength} characters`,
  ]
    .filter(Boolean)
    .join(", ");
  const expected = member.type
    ? `expected ${member.type}${bounds ? ` (${bounds})` : ""}`
    : (first.summary ?? first.message);
  return path ? `invalid parameter ${path}: ${expected}` : `invalid parameter: ${expected}`;
}

/**
 * What a failed call answers: its status, its body in the caller's format (by path) and the headers the error
 * carries. `code` is Elysia's name for the failure when it raised one (a validation or parse error, no route).
 * One mapping for Elysia's error hook and the relay's plain routes, served without Elysia (relay/plain-route.ts).
 */
export function errorReply(
  request: Request,
  error: unknown,
  code?: unknown,
): { status: number; body: unknown; headers?: Record<string, string> } {
  const path = new URL(request.url).pathname;
  const format = errorFormatFor(path);
  let status = 500;
  let message = "internal server error, please contact the administrator";
  let errorCode: string | undefined;
  // Elysia wraps errors thrown while parsing in a ParseError; the AppError is its cause.
  const appError =
    error instanceof AppError
      ? error
      : (error as any)?.cause instanceof AppError
        ? ((error as any).cause as AppError)
        : null;
  if (appError) {
    status = appError.status;
    message = appError.message;
    errorCode = appError.code;
  } else if (code === "VALIDATION") {
    status = 400;
    message = validationMessage(error);
  } else if (code === "PARSE") {
    status = 400;
    message = "malformed request body: expected valid JSON";
  } else if (code === "NOT_FOUND") {
    status = 404;
    message = format === "envelope" ? "not found" : `unknown route ${path}`;
  } else if (code === "INVALID_COOKIE_SIGNATURE") {
    status = 401;
    message = "invalid session cookie";
  } else if (isDatabaseUnavailable(error) || isCacheUnavailable(error)) {
    // A dependency that is down is not the request's fault, and its stack says nothing new each time.
    status = 503;
    message = isCacheUnavailable(error) ? CACHE_UNAVAILABLE_MESSAGE : DATABASE_UNAVAILABLE_MESSAGE;
    if (format !== "envelope") errorCode = "service_unavailable";
    logUnavailable(`[${request.method} ${path}] ${(error as Error)?.message ?? error}`);
  } else {
    console.error(`[${request.method} ${path}]`, error);
  }
  const body = errorBody(format, status, message, errorCode);
  // Google's 429 carries its wait as a google.rpc.RetryInfo detail too (Google's clients read it).
  const wait = format === "gemini" && status === 429 ? appError?.headers?.["Retry-After"] : undefined;
  if (wait)
    (body as { error: Record<string, unknown> }).error.details = [
      { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${wait}s` },
    ];
  return { status, body, headers: appError?.headers };
}
