// `npm start` stops with npm: a SIGTERM to the npm process (which runs scripts/start.ts under `sh -c` and does
// not pass the signal through the shell) stops the gateway too, by its graceful path, instead of leaving it
// orphaned and still serving.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, freePort } from "../helpers/server-process.ts";

const dataDir = mkdtempSync(join(tmpdir(), "sy-npm-start-"));
const consoleDir = mkdtempSync(join(tmpdir(), "sy-npm-start-console-"));
writeFileSync(join(consoleDir, "index.html"), "<!doctype html><title>console</title>");
/** Every process npm started, for cleanup should the gateway outlive the test. */
const started: number[] = [];

function descendants(pid: number): number[] {
  const out = Bun.spawnSync(["ps", "-o", "pid=", "--ppid", String(pid)]).stdout.toString();
  const kids = out
    .split("\n")
    .map((s) => Number(s.trim()))
    .filter((n) => n > 0);
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

const answers = (base: string) =>
  fetch(`${base}/api/status`).then(
    (r) => r.ok,
    () => false,
  );

afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(consoleDir, { recursive: true, force: true });
});

describe("npm start", () => {
  test("a SIGTERM to npm stops the gateway cleanly: the port stops answering", async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      PORT: String(port),
      DATA_DIR: dataDir,
      CONSOLE_DIR: consoleDir,
      SESSION_SECRET: "npm-start-test",
    };
    delete env.SQL_DSN;
    delete env.REDIS_CONN_STRING;
    const npm = Bun.spawn(["npm", "start"], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" });
    let out = "";
    const dec = new TextDecoder();
    void (async () => {
      for await (const c of npm.stdout as ReadableStream<Uint8Array>) out += dec.decode(c);
    })();
    void (async () => {
      for await (const c of npm.stderr as ReadableStream<Uint8Array>) out += dec.decode(c);
    })();
    let up = false;
    for (let i = 0; i < 600 && !up && npm.exitCode === null; i++) {
      up = await answers(base);
      if (!up) await Bun.sleep(50);
    }
    expect(up).toBe(true);
    started.push(...descendants(npm.pid));

    npm.kill("SIGTERM");
    await npm.exited;
    let stopped = false;
    for (let i = 0; i < 600 && !stopped; i++) {
      stopped = !(await answers(base)) && out.includes("stopped cleanly");
      if (!stopped) await Bun.sleep(50);
    }
    expect(out).toContain("stopped cleanly");
    expect(await answers(base)).toBe(false);
  }, 60_000);
});
