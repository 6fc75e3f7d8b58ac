// The management API's OpenAPI 3.1 document, generated from the routes' own schemas (Elysia `t` in each
// module's model.ts) by @elysiajs/openapi's generator, then completed with what the route table does not
// carry: the tags' descriptions, the security schemes and each operation's least role (x-switchyard-role,
// set by the `role` macro in http/auth.ts). Built on the first request and kept: nothing here runs at start.
import type { AnyElysia } from "elysia";
import { VERSION } from "../../config.ts";
import { ROLE_FIELD } from "../../http/schema.ts";

type Operation = Record<string, any>;
export type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; [k: string]: unknown };

/** One line per module tag (the `tags` of each module's Elysia instance). */
export const TAGS: Record<string, string> = {
  status: "Site status, notice, about page and legal texts (public)",
  setup: "First-run setup wizard",
  auth: "Password registration, login and logout",
  oauth: "Third-party sign-in and account binding (GitHub, OIDC, LinuxDO, WeChat, Telegram)",
  verification: "Mail verification codes, password reset, email binding",
  twofa: "Two-factor sign-in (TOTP) and secure verification",
  passkey: "Passkeys (WebAuthn)",
  user: "The caller's own account, and user administration",
  option: "Site options (super admin)",
  group: "User groups",
  token: "API tokens (sk-...) of the caller",
  channel: "Upstream channels (admin)",
  redemption: "Redemption codes and redeeming them",
  wallet: "Top-up and payment callbacks",
  checkin: "Daily check-in",
  log: "Usage logs and their statistics",
  dashboard: "Quota usage over time",
  pricing: "Model prices and group ratios",
  task: "Asynchronous tasks (Midjourney drawings, Suno, video)",
  lists: "Model and group lists the console's forms read",
  "model-meta": "Model metadata and vendors (admin)",
  prefill: "Prefill groups for the console's forms (admin)",
  "ratio-sync": "Price ratio exchange between sites",
  panels: "Dashboard panels (Uptime Kuma status)",
  docs: "This document and its viewer",
};

const ROLE_TEXT: Record<string, string> = {
  public: "No credentials needed.",
  viewer: "Open to guests; a signed-in caller (session or access token) gets an answer for their account.",
  user: "Needs a signed-in user (any role).",
  admin: "Needs an admin (role 10) or the super admin.",
  root: "Needs the super admin (role 100); a super admin with two-factor sign-in enforced must have completed it.",
};

const SECURITY_SCHEMES = {
  session: {
    type: "apiKey",
    in: "cookie",
    name: "session",
    description:
      "The console's session: the HttpOnly cookie set by POST /api/user/login. Sent together with New-Api-User.",
  },
  userId: {
    type: "apiKey",
    in: "header",
    name: "New-Api-User",
    description:
      "The signed-in user's id. Required with the session cookie (a cross-site request cannot send it); optional with an access token, where it must match the token's user.",
  },
  accessToken: {
    type: "apiKey",
    in: "header",
    name: "Authorization",
    description:
      "A system access token (GET /api/user/token generates one; the console's personal settings show it), raw or as `Bearer <token>`. Not an sk- relay token.",
  },
};

const INTRO = [
  "The management API of Switchyard: every route under /api, generated from the routes' schemas.",
  "",
  "Replies are the envelope `{success, message, data}` (HTTP 200 on success; on failure a 4xx/5xx status with `success: false` and the reason in `message`).",
  "Request schemas are permissive on purpose: fields they do not name are accepted, and numbers may arrive as numeric strings where the console sends them so.",
  "Each operation's `x-switchyard-role` names the least role it needs (public, viewer, user, admin, root).",
  "",
  "Not in this document: the relay (/v1/..., /v1beta/..., /mj/..., /suno/..., /pg/..., /kling/..., /jimeng/...), which follows the OpenAI, Anthropic (Claude), Google Gemini, Midjourney-proxy and Suno APIs' own specifications and takes `sk-` tokens; and /metrics (Prometheus text format).",
].join("\n");

const ERROR_REPLY = {
  type: "object",
  description: "A failed management call",
  required: ["success", "message"],
  properties: {
    success: { const: false },
    message: { type: "string", description: "why it failed, for a person to read" },
    code: { type: "string", description: "a machine-readable reason, on some errors" },
  },
  additionalProperties: true,
};

const API_PATH = /^\/api(\/|$)/;
const OptionalKind = Symbol.for("TypeBox.Optional");
const WITH_BODY = new Set(["post", "put", "patch", "delete"]);

/** Builds the document from the app's route table (the app that `docsModule` was mounted on). */
export async function buildDocument(app: AnyElysia): Promise<Document> {
  const { toOpenAPISchema } = await import("@elysiajs/openapi/openapi");
  const optionalBody = new Set<string>();
  // The whole app's table (a plugin's own `routes` holds only its own routes; the global ones are its parent's).
  const global = app as unknown as { getGlobalRoutes(): AnyElysia["routes"]; getGlobalDefinitions(): unknown };
  const routes = global
    .getGlobalRoutes()
    .filter((r) => API_PATH.test(r.path))
    .map((r) => {
      const hooks = { ...r.hooks } as Record<string, any>;
      if (hooks.body?.[OptionalKind]) optionalBody.add(`${r.method.toLowerCase()} ${openapiPath(r.path)}`);
      // The app's own body parser (app.ts: size limit, JSON) is a function the generator cannot describe; with
      // only such parsers it would list no content type at all. Named parsers (a route's `parse: "json"`) stay.
      const named = (hooks.parse ?? []).filter((p: { fn: unknown }) => typeof p.fn !== "function");
      if (named.length) hooks.parse = named;
      else delete hooks.parse;
      return { ...r, hooks };
    });
  const table = {
    getGlobalRoutes: () => routes,
    getGlobalDefinitions: () => global.getGlobalDefinitions(),
  } as unknown as AnyElysia;
  const generated = toOpenAPISchema(table, { staticFile: false, methods: ["options", "head"] }) as {
    paths: Document["paths"];
    components: { schemas: Record<string, unknown> };
  };
  // A copy: the generator hands back the routes' own schema objects, which Elysia validates with.
  const { paths, components } = JSON.parse(JSON.stringify(generated)) as typeof generated;
  stripElysiaKeywords(paths);
  stripElysiaKeywords(components);
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(item))
      completeOperation(op, WITH_BODY.has(method) && optionalBody.has(`${method} ${path}`));
  }
  return {
    openapi: "3.1.1",
    info: { title: "Switchyard management API", version: VERSION, description: INTRO },
    servers: [{ url: "/", description: "this server" }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      ...components,
      schemas: { ...components.schemas, ErrorReply: ERROR_REPLY },
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

/**
 * Removes what Elysia's schemas carry for Elysia only: `noValidate` (reply schemas are documentation), `error`
 * (the message a failed check answers; a property that happens to be named "error" is an object) and the
 * numeric-string branch's default.
 */
function stripElysiaKeywords(node: unknown): void {
  if (Array.isArray(node)) for (const v of node) stripElysiaKeywords(v);
  else if (node && typeof node === "object") {
    const o = node as Record<string, unknown>;
    delete o.noValidate;
    if (typeof o.error === "string") delete o.error;
    // Elysia's t.Integer/t.Numeric also take a numeric string; that branch's `default: 0` is no default of the API.
    if (o.type === "string" && (o.format === "integer" || o.format === "numeric") && o.default === 0) delete o.default;
    for (const v of Object.values(o)) stripElysiaKeywords(v);
  }
}

/** Elysia's /user/:id as OpenAPI's /user/{id}. */
const openapiPath = (path: string) => path.replace(/:([^/]+)/g, "{$1}");

function completeOperation(op: Operation, optionalBody: boolean): void {
  const role: string = op[ROLE_FIELD] ?? "public";
  op[ROLE_FIELD] = role;
  if (!op.security) op.security = [];
  const note = `**Role:** ${role}. ${ROLE_TEXT[role] ?? ""}`;
  op.description = op.description ? `${op.description}\n\n${note}` : note;
  if (op.requestBody) {
    // A body schema wrapped in t.Optional: the route also answers a call without one.
    if (optionalBody) op.requestBody.required = false;
    // The generator offers JSON, urlencoded and multipart for an object body. Elysia would parse all three,
    // but management clients send JSON; the payment callbacks, which take forms, name their parser.
    const content = op.requestBody.content;
    if (content?.["application/json"] && content["multipart/form-data"] && !op["x-form-body"]) {
      delete content["application/x-www-form-urlencoded"];
      delete content["multipart/form-data"];
    }
  }
  delete op["x-form-body"];
  op.responses ??= {};
  op.responses.default ??= {
    description: "An error: a 4xx/5xx status and `{success: false, message}`",
    content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorReply" } } },
  };
}
