// A relay route as a plain request handler, for the server's native route table as well as for Elysia
// (relay/index.ts relayJsonRoutes): it reads its own body within its byte cap and answers its own errors in
// the caller's format (by path), with the mapping Elysia's error hook uses, so both ways answer alike.
import { errorReply } from "../http/errors.ts";
import { readBodyText } from "./body.ts";

/** `server`: the one the request came in on (null under app.handle()). */
export type PlainRoute = (request: Request, server: any) => Promise<Response>;

export function plainRoute(path: string, limit: number, run: (request: Request, server: any, text: string) => Promise<Response>): PlainRoute {
  return async (request, server) => {
    try {
      // The body first, as Elysia's parse step does: an oversized body is a 413 whatever the key.
      return await run(request, server, await readBodyText(request, limit));
    } catch (e) {
      const reply = errorReply(path, e);
      return Response.json(reply.body, { status: reply.status, headers: reply.headers });
    }
  };
}
