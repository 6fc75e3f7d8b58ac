// The management API's OpenAPI document (GET /api/openapi.json): a valid OpenAPI 3.1 document, generated from
// the route table, that covers every /api route with its request and reply schemas, its tag and its least role;
// and the docs pages that read it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Value } from "@sinclair/typebox/value";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";
import { Elysia } from "elysia";
import { ROLE } from "../../server/catalogue/index.ts";
import { docsModule } from "../../server/modules/docs/index.ts";
import { loadConfig } from "../../server/config.ts";
import { okReply } from "../../server/http/schema.ts";

const API = /^\/api(\/|$)/;
const ROLES = ["public", "viewer", "user", "admin", "root"];
const openapiPath = (path: string) => path.replace(/:([^/]+)/g, "{$1}");

let ctx: TestContext;
let doc: any;
let user: Session;
let admin: Session;

beforeAll(async () => {
  ctx = await testContext();
  user = await ctx.user(ROLE.common);
  admin = await ctx.user(ROLE.admin);
  const r = await ctx.request("GET", "/api/openapi.json");
  expect(r.status).toBe(200);
  doc = r.body;
});
afterAll(() => ctx.close());

type RouteEntry = { method: string; path: string; handler: unknown; hooks: Record<string, any> };

/** Every route of the app under /api, as Elysia's route table has it (OPTIONS/HEAD are not operations). */
const apiRoutes = () =>
  (ctx.app.routes as RouteEntry[]).filter((r) => API.test(r.path) && !["OPTIONS", "HEAD"].includes(r.method));

/**
 * What a route lacks in the document: its operation; a schema for the path parameters, query or body its handler
 * reads (read from the handler's source, as Elysia itself does); a reply schema; a declared tag; a role; a summary.
 */
function coverageProblems(routes: RouteEntry[], document: any): string[] {
  const problems: string[] = [];
  const declared = new Set((document.tags ?? []).map((t: { name: string }) => t.name));
  for (const r of routes) {
    const name = `${r.method} ${r.path}`;
    const op = document.paths[openapiPath(r.path)]?.[r.method.toLowerCase()];
    if (!op) {
      problems.push(`${name}: not in the document`);
      continue;
    }
    const source = String(r.handler);
    if (r.path.includes(":") && !r.hooks.params) problems.push(`${name}: path parameters without a params schema`);
    if (/\b(query|searchParams)\b/.test(source) && !r.hooks.query)
      problems.push(`${name}: reads the query string but has no query schema`);
    if (/\bbody\b/.test(source) && !r.hooks.body) problems.push(`${name}: reads a body but has no body schema`);
    if (r.hooks.body && !op.requestBody?.content) problems.push(`${name}: body schema missing from the document`);
    const replies = Object.entries(op.responses ?? {}).filter(
      ([status, reply]: [string, any]) => /^2\d\d$/.test(status) && reply.content,
    );
    if (!replies.length || !r.hooks.response) problems.push(`${name}: no reply schema`);
    if (!op.tags?.length || !op.tags.every((t: string) => declared.has(t)))
      problems.push(`${name}: no declared tag (${op.tags})`);
    if (!ROLES.includes(op["x-switchyard-role"])) problems.push(`${name}: no x-switchyard-role`);
    if (!op.summary) problems.push(`${name}: no summary (detail: { summary })`);
  }
  return problems;
}

describe("GET /api/openapi.json", () => {
  test("is a valid OpenAPI 3.1 document", async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["accessToken", "session", "userId"]);
    // What the schema cannot check: unique operationIds, every {name} of a path declared as a path parameter.
    const ids = new Set<string>();
    const semantic: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      for (const [method, op] of Object.entries<any>(item)) {
        if (ids.has(op.operationId)) semantic.push(`${method} ${path}: operationId ${op.operationId} repeated`);
        ids.add(op.operationId);
        const declared = (op.parameters ?? [])
          .filter((p: any) => p.in === "path")
          .map((p: any) => p.name)
          .sort();
        if (JSON.stringify(declared) !== JSON.stringify(names))
          semantic.push(`${method} ${path}: path parameters ${declared} for ${names}`);
      }
    }
    expect(semantic).toEqual([]);
  });

  test("every /api route is in it, with request schemas for what it reads, a reply schema, a tag, a role and a summary", () => {
    expect(coverageProblems(apiRoutes(), doc)).toEqual([]);
  });

  test("the coverage check fails for a route that reads input without schemas and describes no reply", async () => {
    const app = new Elysia()
      .use(docsModule(ctx.deps))
      .post("/api/undocumented/:id", ({ body, query, params }) => ({ body, query, params }))
      .get("/api/described", () => ({ success: true, message: "" }), {
        response: okReply,
        detail: { summary: "described" },
      });
    const bad = await (await app.handle(new Request("http://localhost/api/openapi.json"))).json();
    const routes = (app.routes as RouteEntry[]).filter(
      (r) => API.test(r.path) && !r.path.startsWith("/api/docs") && r.path !== "/api/openapi.json",
    );
    expect(coverageProblems(routes, bad)).toEqual([
      "POST /api/undocumented/:id: path parameters without a params schema",
      "POST /api/undocumented/:id: reads the query string but has no query schema",
      "POST /api/undocumented/:id: reads a body but has no body schema",
      "POST /api/undocumented/:id: no reply schema",
      "POST /api/undocumented/:id: no declared tag (undefined)",
      "POST /api/undocumented/:id: no summary (detail: { summary })",
      "GET /api/described: no declared tag (undefined)",
    ]);
  });

  test("it holds /api routes only: the relay follows its providers' own specifications", () => {
    const paths = Object.keys(doc.paths);
    expect(paths.length).toBeGreaterThan(100);
    expect(paths.filter((p) => !API.test(p))).toEqual([]);
    expect(paths.length).toBe(new Set(apiRoutes().map((r) => openapiPath(r.path))).size);
  });

  test("management replies are described as the envelope {success, message, data}", () => {
    const reply = doc.paths["/api/token/"].get.responses["200"].content["application/json"].schema;
    expect(reply.required).toEqual(expect.arrayContaining(["success", "message"]));
    expect(Object.keys(reply.properties)).toEqual(expect.arrayContaining(["success", "message", "data"]));
    expect(doc.paths["/api/token/"].get.responses.default.content["application/json"].schema.$ref).toBe(
      "#/components/schemas/ErrorReply",
    );
  });

  test("bodies that were not described before are now, and stay permissive", async () => {
    const batch = doc.paths["/api/token/batch"].post.requestBody.content["application/json"].schema;
    expect(batch.properties.ids).toBeDefined();
    expect(batch.additionalProperties).not.toBe(false);
    // Elysia-only keywords are left out of the document (and stay on the live schemas, which still validate).
    expect(JSON.stringify(doc)).not.toContain('"noValidate"');
    const bad = await ctx.request("POST", "/api/token/batch", { as: user, body: { ids: "1,2" } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe("ids is required: a list of token ids");
    expect(
      (await ctx.request("POST", "/api/token/batch", { as: user, body: { ids: [999999], extra: 1 } })).body,
    ).toEqual({ success: true, message: "", data: 0 });
  });

  test("the schemas added for the docs refuse nothing the services accepted: nulls, numeric strings, extra fields", async () => {
    const root = await ctx.login("root", ROOT_PASSWORD);
    const calls: [string, string, unknown][] = [
      [
        "POST",
        "/api/channel/multi_key/manage",
        { channel_id: 999999, action: "get_key_status", status: null, page: null, page_size: "x", extra: 1 },
      ],
      ["POST", "/api/vendors", { name: "docs-vendor", description: null, icon: null, status: 1, extra: 1 }],
      [
        "POST",
        "/api/models",
        { model_name: "docs-model", vendor_id: null, endpoints: "", tags: null, status: "1", extra: 1 },
      ],
      ["POST", "/api/prefill_group/", { name: "docs", type: "model", items: ["a"], description: null }],
      ["POST", "/api/ratio_sync/fetch", { upstreams: null, channel_ids: null, timeout: null }],
      ["POST", "/api/ratio_sync/fetch", undefined],
      ["POST", "/api/token/batch", undefined],
      ["GET", "/api/log/?p=1&page_size=10&type=2&foo=bar", undefined],
      ["GET", "/api/mj/?p=0&mj_id=&foo=bar", undefined],
      ["GET", "/api/user/epay/notify?out_trade_no=x&money=1.00&foo=bar", undefined],
      ["GET", "/api/oauth/telegram/login?id=1&hash=x&foo=bar", undefined],
    ];
    const refused: string[] = [];
    for (const [method, path, body] of calls) {
      const r = await ctx.request(method, path, { as: root, body });
      // A validation failure answers "invalid parameter ..."; the services' own answers are what they were before.
      if (typeof r.body?.message === "string" && r.body.message.startsWith("invalid parameter"))
        refused.push(`${method} ${path}: ${r.body.message}`);
    }
    expect(refused).toEqual([]);
  });

  test("the roles it names are the roles the routes enforce", async () => {
    const wrong: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const role = op["x-switchyard-role"];
        if (!["user", "admin", "root"].includes(role)) continue;
        const url = path.replace(/\{[^}]+\}/g, "999999");
        // No credentials: refused before the handler runs (a malformed request may be refused first, with 400).
        const guest = await ctx.request(method.toUpperCase(), url);
        if (![400, 401].includes(guest.status) || guest.body.success !== false)
          wrong.push(`${method} ${path} as guest: ${guest.status}`);
        if (role === "user") continue;
        const below = role === "root" ? admin : user;
        const r = await ctx.request(method.toUpperCase(), url, { as: below });
        if (![400, 403].includes(r.status)) wrong.push(`${method} ${path} below ${role}: ${r.status}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(doc.paths["/api/option/"].get["x-switchyard-role"]).toBe("root");
    expect(doc.paths["/api/channel/"].get["x-switchyard-role"]).toBe("admin");
    expect(doc.paths["/api/user/self"].get["x-switchyard-role"]).toBe("user");
    expect(doc.paths["/api/status"].get["x-switchyard-role"]).toBe("public");
    expect(doc.paths["/api/pricing"].get["x-switchyard-role"]).toBe("viewer");
    expect(doc.paths["/api/user/self"].get.security).toEqual([{ session: [], userId: [] }, { accessToken: [] }]);
  });

  test("what the routes answer matches the reply schemas they document", async () => {
    const root = await ctx.login("root", ROOT_PASSWORD);
    await ctx.request("POST", "/api/token/", { as: root, body: { name: "doc", unlimited_quota: true } });
    await ctx.request("POST", "/api/redemption/", { as: root, body: { name: "doc", quota: 100, count: 1 } });
    await ctx.request("POST", "/api/channel/", {
      as: root,
      body: { type: 1, name: "doc", key: "sk-x", models: "gpt-4o", group: "default" },
    });
    const calls = [
      "/api/status",
      "/api/notice",
      "/api/setup",
      "/api/user/self",
      "/api/user/",
      "/api/token/",
      "/api/channel/",
      "/api/redemption/",
      "/api/log/",
      "/api/log/stat",
      "/api/option/",
      "/api/group/",
      "/api/pricing",
      "/api/user/models",
      "/api/channel/models",
      "/api/channel/models_enabled",
      "/api/user/2fa/status",
      "/api/user/2fa/stats",
      "/api/verify/status",
      "/api/user/passkey",
      "/api/user/topup/info",
      "/api/prefill_group/",
      "/api/models/search",
      "/api/mj/",
      "/api/data/",
      "/api/channel/test/progress",
      "/api/channel/update_balance/progress",
    ];
    const table = apiRoutes();
    const wrong: string[] = [];
    for (const path of calls) {
      const r = await ctx.request("GET", path, { as: root });
      const route = table.find((x) => x.method === "GET" && x.path === path)!;
      const schema = route.hooks.response?.[200] ?? route.hooks.response;
      if (r.status !== 200 || r.body.success !== true) wrong.push(`${path}: ${r.status} ${r.body.message}`);
      else if (!Value.Check(schema, r.body))
        wrong.push(
          `${path}: ${[...Value.Errors(schema, r.body)]
            .slice(0, 3)
            .map((e) => `${e.path} ${e.message}`)
            .join("; ")}`,
        );
    }
    expect(wrong).toEqual([]);
  });

  test("is answered before the setup wizard has run, and the same document every time", async () => {
    const fresh = await testContext({ setup: false });
    try {
      const a = await fresh.request("GET", "/api/openapi.json");
      const b = await fresh.request("GET", "/api/openapi.json");
      expect(a.status).toBe(200);
      expect(b.body).toEqual(a.body);
    } finally {
      await fresh.close();
    }
  });

  test("is sent gzipped when the client accepts it, and answers 304 to its ETag", async () => {
    const url = "http://localhost/api/openapi.json";
    const gz = await ctx.app.handle(new Request(url, { headers: { "accept-encoding": "gzip, br" } }));
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    expect(JSON.parse(new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(await gz.arrayBuffer()))))).toEqual(doc);
    const etag = gz.headers.get("etag")!;
    expect(etag).toBeTruthy();
    const again = await ctx.app.handle(new Request(url, { headers: { "if-none-match": etag } }));
    expect(again.status).toBe(304);
    // Readable from another origin (an online editor, a client generator in the browser); no credentials involved.
    expect(gz.headers.get("access-control-allow-origin")).toBe("*");
  });

  test("nothing of it is loaded at start: the generator is imported with the first request for the document", () => {
    const script = `
      const loaded = () => Object.keys(require.cache).some((k) => k.includes("/node_modules/@elysiajs/openapi/") || k.includes("/server/modules/docs/service.ts"));
      const { Elysia } = await import("elysia");
      await import("./server/app.ts");
      const atStart = loaded();
      await (await import("./server/modules/docs/service.ts")).buildDocument(new Elysia().get("/api/x", () => "x"));
      console.log(JSON.stringify({ atStart, afterFirst: loaded() }));
    `;
    const proc = Bun.spawnSync([process.execPath, "-e", script], {
      cwd: `${import.meta.dir}/../..`,
      env: { ...process.env },
    });
    expect(proc.exitCode).toBe(0);
    expect(JSON.parse(proc.stdout.toString().trim().split("\n").at(-1)!)).toEqual({ atStart: false, afterFirst: true });
  });

  test("API_DOCS_ENABLED=false turns the document and the pages off", async () => {
    expect(loadConfig({ SESSION_SECRET: "x" }).apiDocsEnabled).toBe(true);
    expect(loadConfig({ SESSION_SECRET: "x", API_DOCS_ENABLED: "false" }).apiDocsEnabled).toBe(false);
    const off = await testContext({ config: { apiDocsEnabled: false } });
    try {
      for (const p of ["/api/openapi.json", "/api/docs", "/api/docs/scalar"])
        expect((await off.request("GET", p)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});

describe("GET /api/docs", () => {
  test("answers a self-contained HTML page that reads the document", async () => {
    const r = await ctx.request("GET", "/api/docs");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    expect(r.body).toContain("/api/openapi.json");
    // Nothing loaded from another host: the page works offline.
    expect(r.body).not.toMatch(/<script[^>]+src=|<link[^>]+href="http/);
    // Its inline script parses (a template-literal escape gone wrong would leave a blank page).
    const script = r.body.slice(r.body.indexOf("<script>") + 8, r.body.indexOf("</script>"));
    expect(() => new Function(script)).not.toThrow();
  });

  test("/api/docs/scalar answers Scalar's page, which loads its script from the CDN", async () => {
    const r = await ctx.request("GET", "/api/docs/scalar");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    expect(r.body).toContain("/api/openapi.json");
    expect(r.body).toContain("cdn.jsdelivr.net");
  });
});
