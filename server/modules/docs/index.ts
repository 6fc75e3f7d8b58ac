// GET /api/openapi.json: the management API's OpenAPI 3.1 document; GET /api/docs: a self-contained page that
// reads it (no script from elsewhere); GET /api/docs/scalar: Scalar's interactive reference, whose script comes
// from the jsDelivr CDN. Off with API_DOCS_ENABLED=false.
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
// The generator, the document's texts and the page are loaded with the first request for them, not at start.
import type { Document } from "./service.ts";

const html = (body: string) =>
  new Response(body, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache" } });
const page = t.String({ description: "an HTML page" });
/** Scalar's browser bundle, major version 1 (1.72 when this was written): fixes arrive, breaking changes do not. */
const SCALAR_CDN = "https://cdn.jsdelivr.net/npm/@scalar/api-reference@1/dist/browser/standalone.min.js";

/** The document serialised once, plain and gzipped, with an ETag for conditional requests. */
interface Served {
  json: string;
  gz: Uint8Array<ArrayBuffer>;
  etag: string;
}

async function serialise(doc: Document): Promise<Served> {
  const json = JSON.stringify(doc);
  return { json, gz: Bun.gzipSync(json) as Uint8Array<ArrayBuffer>, etag: `"${Bun.hash(json).toString(36)}"` };
}

function reply(served: Served, request: Request): Response {
  // Public and without credentials, so any origin may read it (an editor or a client generator in a browser).
  const headers: Record<string, string> = {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-cache",
    etag: served.etag,
    vary: "accept-encoding",
    "access-control-allow-origin": "*",
  };
  if (request.headers.get("if-none-match") === served.etag) return new Response(null, { status: 304, headers });
  if (/\bgzip\b/.test(request.headers.get("accept-encoding") ?? ""))
    return new Response(served.gz, { headers: { ...headers, "content-encoding": "gzip" } });
  return new Response(served.json, { headers });
}

export function docsModule(deps: AppDeps) {
  const plugin = new Elysia({ prefix: "/api", tags: ["docs"] });
  if (!deps.config.apiDocsEnabled) return plugin;
  // Built once, on the first request, from the route table of the app this plugin is mounted on.
  let served: Promise<Served> | null = null;
  return plugin
    .get(
      "/openapi.json",
      async ({ request }) =>
        reply(
          await (served ??= import("./service.ts")
            .then(({ buildDocument }) => buildDocument(plugin))
            .then(serialise)
            .catch((e) => {
              served = null;
              throw e;
            })),
          request,
        ),
      {
        response: t.Object({ openapi: t.String() }, {
          additionalProperties: true,
          description: "an OpenAPI 3.1 document",
          noValidate: true,
        } as { description: string }),
        detail: { summary: "This document (OpenAPI 3.1)" },
      },
    )
    .get("/docs", async () => html((await import("./page.ts")).DOCS_PAGE), {
      response: page,
      detail: { summary: "A page that reads this document (self-contained)" },
    })
    .get(
      "/docs/scalar",
      async () => {
        const { ScalarRender } = await import("@elysiajs/openapi/scalar");
        return html(
          ScalarRender({ title: "Switchyard management API", description: "Switchyard management API", version: "" }, {
            url: "/api/openapi.json",
            cdn: SCALAR_CDN,
            _integration: "elysiajs",
          } as any),
        );
      },
      {
        response: page,
        detail: { summary: "Scalar's interactive reference of this document (loads its script from cdn.jsdelivr.net)" },
      },
    );
}
