// Shared setup of the background-job route tests (update all balances, test all channels): an upstream
// that holds every request until released, an admin-side context around it, and a graceful shutdown
// whose console errors are caught so a test can assert there were none.
import { afterAll, beforeAll, expect } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { gracefulShutdown } from "../../server/shutdown.ts";

export interface GatedUpstream {
  url: string;
  state: { hits: number; aborted: number };
  /** Lets every held and later request answer. */
  open(): void;
  stop(): void;
}

/** An upstream that answers `reply` to every request, but only once the gate opens. */
export function gatedUpstream(reply: unknown): GatedUpstream {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const state = { hits: 0, aborted: 0 };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      state.hits++;
      req.signal.addEventListener("abort", () => state.aborted++);
      await gate;
      return Response.json(reply);
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, state, open: () => open(), stop: () => server.stop(true) };
}

export interface BackgroundFixture {
  ctx: TestContext;
  admin: Session;
  up: GatedUpstream;
}

/** One context, admin and gated upstream for the tests of the calling describe; read them inside tests. */
export function sharedBackgroundFixture(reply: unknown): BackgroundFixture {
  const fx = {} as BackgroundFixture;
  beforeAll(async () => {
    fx.ctx = await testContext();
    fx.admin = await fx.ctx.user(10);
    fx.up = gatedUpstream(reply);
  });
  afterAll(async () => {
    fx.up.open();
    fx.up.stop();
    await fx.ctx.close();
  });
  return fx;
}

/** Runs `body` on a context of its own that it may shut down; the context is torn down whatever happens. */
export async function withShutdownFixture(
  reply: unknown,
  body: (fx: BackgroundFixture) => Promise<void>,
): Promise<void> {
  const ctx = await testContext();
  const up = gatedUpstream(reply);
  try {
    await body({ ctx, admin: await ctx.user(10), up });
  } finally {
    up.open();
    up.stop();
    // The shutdown under test already ran the hooks; closing again must not run them twice.
    ctx.deps.shutdownHooks.length = 0;
    await ctx.close().catch(() => {});
  }
}

/** Shuts down with a short grace and returns what was logged through console.error meanwhile. */
export async function shutdownLoggingErrors(ctx: TestContext): Promise<unknown[]> {
  const errors: unknown[] = [];
  const origError = console.error;
  console.error = (...a: unknown[]) => void errors.push(a);
  try {
    await gracefulShutdown(null, ctx.deps, { graceMs: 100, log: () => {} });
  } finally {
    console.error = origError;
  }
  return errors;
}

/** Polls `cond` for up to ~2.5 s, then asserts it. */
export async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await Bun.sleep(5);
  expect(cond()).toBe(true);
}
