// A relay route as a plain request handler, for the server's native route table as well as for Elysia
// (relay/index.ts relayJsonRoutes): it reads its own body within its byte cap and answers its own errors in
// the caller's format (by path), with the mapping Elysia's error hook uses, so both ways answer alike.
import { errorReply } from "../http/errors.ts";
import { readBodyText } from "./body.ts";
import { checkOneHost } from "../http/host.ts";

/** `server`: the one the request came in on (null under app.handle()); `socket`: true from the server's native
 * route table, which serves only requests that came in on a connection (unknown through Elysia). */
export type PlainRoute = (request: Request, server: any, socket?: boolean) => Promise<Response>;

/** `run` answers a Response, or a plain value sent as JSON (as an Elysia handler's is). */
export function plainRoute(
  limit: number,
  run: (request: Request, server: any, text: string, socket?: boolean) => Promise<Response | object>,
): PlainRoute {
  return async (request, server, socket) => {
    try {
      checkOneHost(request);
      // The body first, as Elysia's parse step does: an oversized body is a 413 whatever the key.
      const answer = await run(request, server, await readBodyText(request, limit), socket);
      return answer instanceof Response ? answer : Response.json(answer);
    } catch (e) {
      // The error's format follows the path asked for, as in Elysia's error hook (a wildcard route serves both
      // /v1beta/models/... and /v1/models/...).
      const reply = errorReply(request, e);
      return Response.json(reply.body, { status: reply.status, headers: reply.headers });
    }
  };
}
