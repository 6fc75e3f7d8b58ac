// Graceful shutdown: the order of its steps (unit), and a real server process that is sent SIGTERM in the
// middle of a streaming relay call: the call completes, its usage reaches the database, the process exits 0.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gracefulShutdown, requestWindowMs } from "../../server/shutdown.ts";
import { BUN, ROOT, provision as provisionServer, startServer as start } from "../helpers/server-process.ts";
import { testContext } from "../helpers/app.ts";

const startServer = (dataDir: string, env: Record<string, string> = {}) =>
  start(dataDir, { SESSION_SECRET: "shutdown-test", ...env });

describe("gracefulShutdown (unit)", () => {
  test("stops accepting, waits for in-flight work, then runs the hooks in order, then closes the database", async () => {
    const ctx = await testContext();
    const events: string[] = [];
    let finishInFlight!: () => void;
    const server = {
      pendingRequests: 1,
      stop(force?: boolean) {
        events.push(force ? "stop(force)" : "stop(graceful)");
        return new Promise<void>((r) => (finishInFlight = () => (events.push("in-flight done"), r())));
      },
    };
    ctx.deps.shutdownHooks.push(
      async () => {
        events.push("hook 1");
        // The database is still open while hooks flush.
        await ctx.deps.db.selectFrom("users").select("id").execute();
      },
      async () => {
        events.push("hook 2");
      },
    );
    const done = gracefulShutdown(server, ctx.deps, { graceMs: 5000, log: (m) => events.push(`log: ${m}`) });
    await Bun.sleep(30);
    expect(events).toEqual([
      `log: waiting up to ${Math.round(requestWindowMs(5000) / 1000)} s for 1 in-flight request(s)`,
      "stop(graceful)",
    ]);
    finishInFlight();
    expect(await done).toEqual({ drained: true });
    expect(events.slice(2)).toEqual(["in-flight done", "hook 1", "hook 2"]);
    await expect(ctx.deps.db.selectFrom("users").select("id").execute()).rejects.toThrow();
    ctx.deps.shutdownHooks.length = 0;
    await ctx.close().catch(() => {});
  });

  test("the grace period bounds the wait: remaining requests are closed and the hooks still run", async () => {
    const ctx = await testContext();
    const events: string[] = [];
    const server = {
      pendingRequests: 2,
      stop(force?: boolean) {
        events.push(force ? "stop(force)" : "stop(graceful)");
        return force ? Promise.resolve() : new Promise<void>(() => {});
      },
    };
    ctx.deps.shutdownHooks.push(async () => void events.push("flush"));
    // The server never drains (its graceful stop never resolves), so only the grace period can end the wait; a
    // timer due halfway through the requests' part of it fires before the remaining requests are cut.
    const shutdown = gracefulShutdown(server, ctx.deps, { graceMs: 200, log: () => {} });
    setTimeout(() => events.push("halfway"), requestWindowMs(200) / 2);
    expect(await shutdown).toEqual({ drained: false });
    expect(events).toEqual(["stop(graceful)", "halfway", "stop(force)", "flush"]);
    ctx.deps.shutdownHooks.length = 0;
    await ctx.close().catch(() => {});
  });

  test("a failing hook does not keep the others from running or the database from closing", async () => {
    const ctx = await testContext();
    const ran: string[] = [];
    ctx.deps.shutdownHooks.push(
      async () => {
        throw new Error("flush failed");
      },
      async () => void ran.push("second"),
    );
    const origError = console.error;
    console.error = () => {};
    try {
      await gracefulShutdown(null, ctx.deps, { graceMs: 100, log: () => {} });
    } finally {
      console.error = origError;
    }
    expect(ran).toEqual(["second"]);
    await expect(ctx.deps.db.selectFrom("users").select("id").execute()).rejects.toThrow();
    ctx.deps.shutdownHooks.length = 0;
    await ctx.close().catch(() => {});
  });
});

// ---------------------------------------------------------------------------------------------------------

const CHUNKS = ["Slow", " answers", " finish", " before", " shutdown", "."];

function mockUpstream(opts: { gapMs: number; stallMs?: number }) {
  return Bun.serve({
    port: 0,
    idleTimeout: 120,
    async fetch(req) {
      const url = new URL(req.url);
      if (url.pathname !== "/v1/chat/completions") return new Response("not found", { status: 404 });
      const body = await req.json();
      const enc = new TextEncoder();
      const frame = (o: unknown) => enc.encode(`data: ${JSON.stringify(o)}\n\n`);
      return new Response(
        new ReadableStream({
          async start(ctrl) {
            for (const c of CHUNKS) {
              ctrl.enqueue(
                frame({
                  id: "chatcmpl-slow",
                  object: "chat.completion.chunk",
                  model: body.model,
                  choices: [{ index: 0, delta: { content: c }, finish_reason: null }],
                }),
              );
              await Bun.sleep(opts.stallMs && c === CHUNKS[0] ? opts.stallMs : opts.gapMs);
            }
            ctrl.enqueue(
              frame({
                id: "chatcmpl-slow",
                object: "chat.completion.chunk",
                model: body.model,
                choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
                usage: { prompt_tokens: 10, completion_tokens: 6, total_tokens: 16 },
              }),
            );
            ctrl.enqueue(enc.encode("data: [DONE]\n\n"));
            ctrl.close();
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    },
  });
}

async function provision(base: string, upstreamPort: number): Promise<string> {
  return (await provisionServer(base, upstreamPort)).key;
}

function streamCall(base: string, key: string): Promise<Response> {
  return fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: "take your time" }],
    }),
  });
}

describe("SIGTERM on a real server process", () => {
  let work: string;
  beforeAll(() => void (work = mkdtempSync(join(tmpdir(), "sy-shutdown-"))));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  test("an in-flight streaming call completes, new connections are refused, usage is flushed, exit code 0", async () => {
    const upstream = mockUpstream({ gapMs: 250 });
    const dataDir = join(work, "drain");
    const srv = await startServer(dataDir);
    try {
      const key = await provision(srv.base, upstream.port!);
      const res = await streamCall(srv.base, key);
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      let text = dec.decode((await reader.read()).value);
      expect(text).toContain("Slow");

      srv.proc.kill("SIGTERM");
      await Bun.sleep(150);
      // The listener is closed while the stream is still running.
      expect(
        await fetch(`${srv.base}/api/status`).then(
          () => "accepted",
          () => "refused",
        ),
      ).toBe("refused");
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += dec.decode(value);
      }
      for (const c of CHUNKS) expect(text).toContain(JSON.stringify(c));
      expect(text).toContain("data: [DONE]");
      expect(await srv.proc.exited).toBe(0);
      expect(srv.output()).toContain("SIGTERM received");
      expect(srv.output()).toContain("stopped cleanly");

      // The usage log was written behind the relay and flushed before the database closed: read it cold.
      expect(existsSync(join(dataDir, "switchyard.db-wal"))).toBe(false);
      const db = new Database(join(dataDir, "switchyard.db"), { readonly: true });
      const logs = db
        .query("SELECT model_name, prompt_tokens, completion_tokens, quota FROM logs WHERE type = 2")
        .all() as any[];
      db.close();
      expect(logs).toHaveLength(1);
      expect(logs[0]).toMatchObject({ model_name: "gpt-4o-mini", prompt_tokens: 10, completion_tokens: 6 });
      expect(logs[0].quota).toBeGreaterThan(0);
    } finally {
      srv.proc.kill("SIGKILL");
      upstream.stop(true);
    }
  }, 30_000);

  test("a second signal exits at once; a second server on a taken port refuses to start", async () => {
    const upstream = mockUpstream({ gapMs: 50, stallMs: 60_000 });
    const srv = await startServer(join(work, "twice"), { SHUTDOWN_GRACE_SECONDS: "30" });
    try {
      const port = new URL(srv.base).port;
      const rival = Bun.spawn([BUN, "server/main.ts", "--port", port, "--data-dir", join(work, "rival")], {
        cwd: ROOT,
        env: { ...(process.env as Record<string, string>), SESSION_SECRET: "x", SQL_DSN: "", REDIS_CONN_STRING: "" },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(await rival.exited).toBe(1);
      expect(await new Response(rival.stderr).text()).toContain("Switchyard could not start");

      const key = await provision(srv.base, upstream.port!);
      const res = await streamCall(srv.base, key);
      const reader = res.body!.getReader();
      await reader.read();
      srv.proc.kill("SIGTERM");
      await Bun.sleep(300);
      srv.proc.kill("SIGINT");
      // 1, not the graceful path's 0 after its 30 s: the stalled stream was not waited for.
      expect(await srv.proc.exited).toBe(1);
      expect(srv.output()).toContain("SIGINT received again: exiting without waiting");
      await reader.cancel().catch(() => {});
    } finally {
      srv.proc.kill("SIGKILL");
      upstream.stop(true);
    }
  }, 30_000);

  test("the wait is bounded by SHUTDOWN_GRACE_SECONDS: a stalled stream is cut and the process still exits 0", async () => {
    const upstream = mockUpstream({ gapMs: 50, stallMs: 60_000 });
    const srv = await startServer(join(work, "bounded"), { SHUTDOWN_GRACE_SECONDS: "1" });
    try {
      const key = await provision(srv.base, upstream.port!);
      const res = await streamCall(srv.base, key);
      const reader = res.body!.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain("Slow");
      srv.proc.kill("SIGTERM");
      // The stream stalls for a minute, so the process can exit only by the grace period running out.
      expect(await srv.proc.exited).toBe(0);
      expect(srv.output()).toContain(
        `waiting up to ${Math.round(requestWindowMs(1000) / 1000)} s for 1 in-flight request(s)`,
      );
      expect(srv.output()).toContain(`grace period of ${requestWindowMs(1000)} ms for requests is over`);
      expect(srv.output()).toContain("stopped after the grace period");
      // The client sees its stream end instead of hanging.
      await reader
        .read()
        .then(async function drain(r): Promise<void> {
          if (!r.done) return reader.read().then(drain);
        })
        .catch(() => {});
    } finally {
      srv.proc.kill("SIGKILL");
      upstream.stop(true);
    }
  }, 30_000);
});
