// The agent tests' gateway: one listening Switchyard over a fresh SQLite database, and "lanes": for each test a
// mock upstream of one wire format behind a channel of its own, in a group of its own, with a user and an
// sk- key that can reach only that channel (one channel enabled at a time, as a new user tries a client).
// Lanes are independent, so tests of several clients run side by side and each checks its own billing.
import { afterAll, beforeAll, expect } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { GlobalRegistrator } from "@happy-dom/global-registrator";
import { relayFixture, type RelayFixture } from "../relay/fixtures.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";
import {
  startClaudeAgentUpstream,
  startGeminiAgentUpstream,
  startOpenAIAgentUpstream,
  type AgentMock,
} from "../mocks/agent-upstreams.ts";
import type { AgentUsage } from "../mocks/agent-script.ts";

export const AGENTS_DIR = import.meta.dir;
const BIN = join(AGENTS_DIR, "node_modules", ".bin");

// The clients are a package of their own (tests/agents/package.json): without it these tests prove nothing,
// so they fail, loudly, rather than skip.
if (!existsSync(join(AGENTS_DIR, "node_modules", ".package-lock.json"))) {
  throw new Error(
    "tests/agents/node_modules is missing: run `npm ci --prefix tests/agents` (npm test does it when it can)",
  );
}

// The test preload registers a DOM for the console's tests; the SDKs would take it for a browser and refuse
// to run (or send browser headers). An app using them runs on a server: so do these tests.
if (GlobalRegistrator.isRegistered) await GlobalRegistrator.unregister();

/** The wire formats a lane's channel can speak. */
export const KINDS = ["openai", "openai-chat", "deepseek", "claude", "gemini"] as const;
export type Kind = (typeof KINDS)[number];

/** Channel type and mock of each kind. openai-chat: an OpenAI channel on a server with chat completions only. */
const CHANNEL: Record<Kind, { type: number; key: string; setting?: Record<string, unknown>; start(): AgentMock }> = {
  openai: { type: 1, key: "sk-upstream", start: () => startOpenAIAgentUpstream({ responses: true }) },
  "openai-chat": {
    type: 1,
    key: "sk-upstream",
    setting: { responses_api: "chat" },
    start: () => startOpenAIAgentUpstream({ responses: false }),
  },
  deepseek: {
    type: 43,
    key: "sk-upstream",
    start: () => startOpenAIAgentUpstream({ responses: false, flavour: "deepseek" }),
  },
  claude: { type: 14, key: "claude-key", start: () => startClaudeAgentUpstream() },
  gemini: { type: 24, key: "gemini-key", start: () => startGeminiAgentUpstream() },
};

/**
 * The models the clients ask for by default or are told to use, every one priced alike so that billing
 * checks are plain arithmetic: model ratio 2, completion ratio 3, cache reads 0.1, cache writes 1.25 for
 * Claude's 5-minute cache and 2 for its 1-hour cache (Anthropic's list prices: 1.25× and 2× input).
 */
export const MODELS = [
  // Claude Code's defaults and its small fast model
  "claude-opus-5-5",
  "claude-sonnet-5",
  "claude-haiku-4-5",
  "claude-haiku-4-5-20251001",
  "claude-sonnet-4-5",
  // Codex's default and a second model
  "gpt-6.2-sol",
  "gpt-5.1-codex-mini",
  // Gemini CLI's models (the router's classifier model and the ones it picks)
  "gemini-3.1-pro-preview",
  "gemini-3.5-flash-lite",
  "gemini-3.8-flash",
  "gemini-3.5-flash",
  "gemini-3-flash-preview",
  "gemini-2.5-pro",
  "gemini-2.5-flash",
  "gemini-2.5-flash-lite",
  // the SDK tests
  "gpt-5.1",
  "gpt-4.1-mini",
  "deepseek-chat",
  "claude-sonnet-4-5-20250929",
  "gemini-2.5-flash-002",
];
export const RATIO = { model: 2, completion: 3, cache: 0.1, cacheWrite: 1.25, cacheWrite1h: 2 };

/** What one served call costs, from the usage the upstream reported. */
export function expectedQuota(u: AgentUsage): number {
  return Math.round(
    RATIO.model
      * (u.input
        + u.cacheRead * RATIO.cache
        + u.cacheWrite5m * RATIO.cacheWrite
        + u.cacheWrite1h * RATIO.cacheWrite1h
        + u.output * RATIO.completion),
  );
}

export interface Lane {
  kind: Kind;
  mock: AgentMock;
  /** The gateway's origin, e.g. http://127.0.0.1:1234 */
  base: string;
  key: string;
  userId: number;
  tokenId: number;
  channelId: number;
}

export interface Gateway {
  fx: RelayFixture;
  base: string;
  /** `mapping`: the channel's model mapping (a client's model name → the upstream's). */
  lane(kind: Kind, o?: { mapping?: Record<string, string> }): Promise<Lane>;
}

/**
 * One gateway for the calling test file, started before its tests and stopped after them. `prices: false`
 * leaves the default catalogue's prices (and nothing else) to price the calls.
 */
export function agentGateway(o: { prices?: boolean } = {}): Gateway {
  const mocks: AgentMock[] = [];
  let server: ReturnType<typeof Bun.serve>;
  let lanes = 0;
  const gw = { base: "" } as Gateway;
  beforeAll(async () => {
    gw.fx = await relayFixture("sqlite");
    if (o.prices !== false) {
      const each = (v: number) => JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, v])));
      await gw.fx.option("ModelRatio", each(RATIO.model));
      await gw.fx.option("CompletionRatio", each(RATIO.completion));
      await gw.fx.option("CacheRatio", each(RATIO.cache));
      await gw.fx.option("CreateCacheRatio", each(RATIO.cacheWrite));
    }
    server = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 120, fetch: (req) => gw.fx.ctx.app.handle(req) });
    gw.base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    server?.stop(true);
    for (const m of mocks) m.stop();
    await gw.fx?.close();
  });
  gw.lane = async (kind, o = {}) => {
    const spec = CHANNEL[kind];
    const mock = spec.start();
    mocks.push(mock);
    const group = `lane${++lanes}`;
    const channelId = await gw.fx.channel({
      type: spec.type,
      name: `${kind}-${group}`,
      key: spec.key,
      base_url: mock.url,
      models: MODELS,
      groups: [group],
      setting: spec.setting,
      model_mapping: o.mapping,
    });
    const user = await gw.fx.user(1_000_000_000, { group });
    const token = await gw.fx.token(user.id, { remain_quota: 500_000_000 });
    return { kind, mock, base: gw.base, key: token.key, userId: user.id, tokenId: token.id, channelId };
  };
  return gw;
}

/**
 * Every call the upstream answered was billed once, at what the upstream reported: one consume log per
 * answered call with the quota the ratios give, and the token's and the user's used quota their sum.
 * Returns the number of billed calls.
 */
export async function expectBilled(gw: Gateway, lane: Lane): Promise<number> {
  await gw.fx.flush();
  const db = gw.fx.ctx.deps.db;
  const logs = await db
    .selectFrom("logs")
    .selectAll()
    .where("user_id", "=", lane.userId)
    .where("type", "=", LOG_TYPE.consume)
    .orderBy("id")
    .execute();
  const answered = lane.mock.answered().length;
  const want = expectedQuota(lane.mock.usage);
  const prompt =
    lane.mock.usage.input + lane.mock.usage.cacheRead + lane.mock.usage.cacheWrite5m + lane.mock.usage.cacheWrite1h;
  expect(
    logs.map((l) => ({
      quota: l.quota,
      prompt: l.prompt_tokens,
      completion: l.completion_tokens,
      channel: l.channel_id,
    })),
  ).toEqual(
    Array.from({ length: answered }, () => ({
      quota: want,
      prompt,
      completion: lane.mock.usage.output,
      channel: lane.channelId,
    })),
  );
  const token = await db
    .selectFrom("tokens")
    .select(["used_quota"])
    .where("id", "=", lane.tokenId)
    .executeTakeFirstOrThrow();
  const user = await db
    .selectFrom("users")
    .select(["used_quota"])
    .where("id", "=", lane.userId)
    .executeTakeFirstOrThrow();
  expect({ token: token.used_quota, user: user.used_quota }).toEqual({ token: want * answered, user: want * answered });
  return answered;
}

/** Every answered call was billed once, at some price, and the token's used quota is their sum. */
export async function expectCharged(gw: Gateway, lane: Lane): Promise<void> {
  await gw.fx.flush();
  const db = gw.fx.ctx.deps.db;
  const logs = await db
    .selectFrom("logs")
    .selectAll()
    .where("user_id", "=", lane.userId)
    .where("type", "=", LOG_TYPE.consume)
    .execute();
  expect(logs).toHaveLength(lane.mock.answered().length);
  for (const l of logs) expect(l.quota).toBeGreaterThan(0);
  const token = await db
    .selectFrom("tokens")
    .select(["used_quota"])
    .where("id", "=", lane.tokenId)
    .executeTakeFirstOrThrow();
  expect(token.used_quota).toBe(logs.reduce((a, l) => a + l.quota, 0));
}

// --- the CLIs -------------------------------------------------------------------------------------------

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** A temporary home for one CLI run, with a work folder in it; removed by `cleanup`. */
export function tempHome(prefix: string): { home: string; work: string; cleanup(): void } {
  const home = mkdtempSync(join(tmpdir(), `sy-${prefix}-`));
  const work = join(home, "work");
  mkdirSync(work);
  return { home, work, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}

export function writeFile(path: string, text: string): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
}

/**
 * Runs one of the installed CLIs with only the environment given, plus PATH, a locale and a TMPDIR inside
 * its HOME: nothing of the developer's own configuration or keys reaches it. It is killed, with its whole
 * process group, after `timeoutMs`.
 */
export async function runCli(
  bin: string,
  args: string[],
  o: { cwd: string; env: Record<string, string>; timeoutMs: number },
): Promise<CliResult> {
  const env: Record<string, string> = {
    PATH: `${BIN}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    LANG: "C.UTF-8",
    TERM: "dumb",
    NO_COLOR: "1",
    CI: "true",
    ...o.env,
  };
  // Their own temporary files (error reports, watcher probes) go inside the run's home, removed with it.
  if (env.HOME && !env.TMPDIR) {
    env.TMPDIR = join(env.HOME, "tmp");
    mkdirSync(env.TMPDIR, { recursive: true });
  }
  // setsid: the CLI and whatever it spawns form a group of their own, killed together on a time-out.
  const proc = Bun.spawn(["setsid", join(BIN, bin), ...args], {
    cwd: o.cwd,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {
      proc.kill("SIGKILL");
    }
  }, o.timeoutMs);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  const code = await proc.exited;
  clearTimeout(timer);
  return { code, stdout, stderr, timedOut };
}

/** What a failed CLI run said, for assertion messages. */
export function describeRun(r: CliResult, lane?: Lane): string {
  const seen = lane ? lane.mock.requests.map((q) => `${q.method} ${q.path}${q.search}`).join("\n  ") : "";
  return `exit ${r.code}${r.timedOut ? " (timed out)" : ""}\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-3000)}${lane ? `\nupstream saw:\n  ${seen}` : ""}`;
}
