// One Host per request. The server joins repeated headers with ", ", and a host name never holds a comma, so a
// comma means the client sent two: which of them a proxy, a virtual host or the gateway's own URLs (request.url
// takes the first) would act on differs, the shape request smuggling and cache poisoning rely on.
import { AppError } from "./errors.ts";

/** Throws 400 when the request carries more than one Host header. */
export function checkOneHost(request: Request): void {
  const host = request.headers.get("host");
  if (host !== null && host.includes(","))
    throw new AppError(400, "the request has more than one Host header", "invalid_host_header");
}
