// Drives a route permission matrix: every route called as guest, user, admin and root, each expected to be
// refused (401 for a guest, 403 otherwise, with a failure message) below its least role and let through
// from it on.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ROOT_PASSWORD, testContext, type Session, type TestContext } from "../helpers/app.ts";

export type Who = "guest" | "user" | "admin" | "root";
const LEVEL: Record<Who, number> = { guest: 0, user: 1, admin: 10, root: 100 };
const EVERYONE = Object.keys(LEVEL) as Who[];

/** [method, path, body, least role that may call it] */
export type RouteRule = [string, string, unknown, Who];

export interface MatrixContext {
  ctx: TestContext;
  sessions: Record<Who, Session | null>;
}

/** A context with one session per role for the calling file's tests; `prepare` runs once the sessions exist. */
export function matrixContext(prepare?: (ctx: TestContext) => Promise<void>): MatrixContext {
  const m = {} as MatrixContext;
  beforeAll(async () => {
    m.ctx = await testContext();
    m.sessions = {
      guest: null,
      user: await m.ctx.user(1),
      admin: await m.ctx.user(10),
      root: await m.ctx.login("root", ROOT_PASSWORD),
    };
    await prepare?.(m.ctx);
  });
  afterAll(() => m.ctx.close());
  return m;
}

/** One test per route and role, in the calling describe. */
export function routeTests(m: MatrixContext, routes: RouteRule[]): void {
  for (const [method, path, body, least] of routes) {
    for (const who of EVERYONE) {
      const allowed = LEVEL[who] >= LEVEL[least];
      test(`${method} ${path} as ${who} → ${allowed ? "allowed" : "refused"}`, async () => {
        const r = await m.ctx.request(method, path, { as: m.sessions[who], body });
        if (allowed) {
          expect([401, 403]).not.toContain(r.status);
        } else {
          expect(r.status).toBe(who === "guest" ? 401 : 403);
          expect(r.body.success).toBe(false);
          expect(typeof r.body.message).toBe("string");
        }
      });
    }
  }
}
