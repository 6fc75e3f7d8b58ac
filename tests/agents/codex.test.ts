// Codex CLI (`codex exec --json`), unchanged, configured as a user would (config.toml: a model provider whose
// base_url is Switchyard's /v1, env_key naming the variable with the sk- key, wire_api "responses"), through
// each channel kind, with its default model and a second one: a plain answer, and a tool round trip with the
// tool each model is given (the default model's free-form `exec` tool, which runs JavaScript, and the second
// model's `exec_command` function, which runs a shell command).
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { modelOf } from "../mocks/agent-upstreams.ts";
import { agentGateway, describeRun, expectBilled, KINDS, runCli, tempHome, writeFile, type Lane } from "./harness.ts";

const gw = agentGateway();
const RUN_MS = 90_000;

/** The model Codex asks for when given none, and the second model these tests pick with -m. */
const DEFAULT_MODEL = "gpt-6.2-sol";
const SECOND_MODEL = "gpt-5.1-codex-mini";

async function codex(lane: Lane, prompt: string, model: string | null, files: Record<string, string> = {}) {
  const t = tempHome("codex");
  for (const [name, text] of Object.entries(files)) writeFile(join(t.work, name), text);
  const codexHome = join(t.home, ".codex");
  writeFile(join(codexHome, "config.toml"), [
    'model_provider = "switchyard"',
    "",
    "[model_providers.switchyard]",
    'name = "Switchyard"',
    `base_url = "${lane.base}/v1"`,
    'env_key = "SWITCHYARD_API_KEY"',
    'wire_api = "responses"',
    "",
    "[analytics]",
    "enabled = false",
    "",
  ].join("\n"));
  const args = ["exec", "--json", "--skip-git-repo-check", ...(model ? ["-m", model] : []), prompt];
  const run = await runCli("codex", args, { cwd: t.work, timeoutMs: RUN_MS, env: { HOME: t.home, CODEX_HOME: codexHome, SWITCHYARD_API_KEY: lane.key } });
  const events = run.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  const messages = events.filter((e) => e.type === "item.completed" && e.item?.type === "agent_message").map((e) => e.item.text as string);
  return { run, events, messages, work: t.work, cleanup: t.cleanup };
}

describe("codex exec", () => {
  for (const kind of KINDS) {
    for (const model of [null, SECOND_MODEL]) {
      const name = model ?? `${DEFAULT_MODEL} (default)`;
      test.concurrent(`${name}: a plain answer through a ${kind} channel`, async () => {
        const lane = await gw.lane(kind);
        const r = await codex(lane, "Say hello.", model);
        try {
          expect(r.messages, describeRun(r.run, lane)).toEqual([lane.mock.text]);
          expect(r.events.some((e) => e.type === "turn.completed")).toBe(true);
          const main = lane.mock.calls().find((c) => JSON.stringify(c.body).includes("Say hello."));
          expect(main, describeRun(r.run, lane)).toBeDefined();
          expect(modelOf(main!)).toBe(model ?? DEFAULT_MODEL);
          if (kind === "openai") {
            // Native: Codex's session headers reach the upstream, its sk- key does not.
            const thread = r.events.find((e) => e.type === "thread.started")?.thread_id;
            expect({ session: main!.headers["session-id"], thread: main!.headers["thread-id"], auth: main!.headers.authorization })
              .toEqual({ session: thread, thread, auth: "Bearer sk-upstream" });
            expect(main!.headers["x-codex-turn-metadata"]).toContain(thread);
          }
          await expectBilled(gw, lane);
        } finally {
          r.cleanup();
        }
      }, RUN_MS + 30_000);

      test.concurrent(`${name}: a tool round trip through a ${kind} channel`, async () => {
        const lane = await gw.lane(kind);
        const marker = `MARKER-${Math.random().toString(36).slice(2, 8)}`;
        // The default model's exec runs JavaScript in an isolate; the second model's exec_command runs a shell.
        const directive = model === null ? `#tool exec ${JSON.stringify(`text("${marker}-" + String(6 * 7))`)}` : `#tool exec_command ${JSON.stringify({ cmd: "cat marker.txt" })}`;
        const expected = model === null ? `${marker}-42` : marker;
        const r = await codex(lane, `Find the marker. ${directive}`, model, { "marker.txt": `${marker}\n` });
        try {
          expect(r.messages.at(-1), describeRun(r.run, lane)).toStartWith("Tool said: ");
          expect(r.messages.at(-1)).toContain(expected);
          const calls = lane.mock.calls();
          expect(JSON.stringify(calls.at(-1)!.body)).toContain(expected);
          await expectBilled(gw, lane);
        } finally {
          r.cleanup();
        }
      }, RUN_MS + 30_000);
    }
  }
});
