// Codex CLI (`codex exec --json`), unchanged, configured as a user would (config.toml: a model provider whose
// base_url is Switchyard's /v1, env_key naming the variable with the sk- key, wire_api "responses"), through
// each channel kind, with its default model and a second one: a plain answer, and a tool round trip with the
// tool each model is given (the default model's free-form `exec` tool, which runs JavaScript, and the second
// model's `exec_command` function, which runs a shell command).
import { describe, expect, test } from "bun:test";
import { modelOf } from "../mocks/agent-upstreams.ts";
import { agentGateway, describeRun, expectBilled, KINDS } from "./harness.ts";
import { codex, CODEX_MODEL, TEST_MS } from "./clis.ts";

const gw = agentGateway();

/** The second model these tests pick with -m. */
const SECOND_MODEL = "gpt-5.1-codex-mini";

describe("codex exec", () => {
  for (const kind of KINDS) {
    for (const model of [null, SECOND_MODEL]) {
      const name = model ?? `${CODEX_MODEL} (default)`;
      test.concurrent(
        `${name}: a plain answer through a ${kind} channel`,
        async () => {
          const lane = await gw.lane(kind);
          const r = await codex(lane, "Say hello.", model);
          try {
            expect(r.messages, describeRun(r.run, lane)).toEqual([lane.mock.text]);
            expect(r.events.some((e) => e.type === "turn.completed")).toBe(true);
            const main = lane.mock.calls().find((c) => JSON.stringify(c.body).includes("Say hello."));
            expect(main, describeRun(r.run, lane)).toBeDefined();
            expect(modelOf(main!)).toBe(model ?? CODEX_MODEL);
            if (kind === "openai") {
              // Native: Codex's session headers reach the upstream, its sk- key does not.
              const thread = r.events.find((e) => e.type === "thread.started")?.thread_id;
              expect({
                session: main!.headers["session-id"],
                thread: main!.headers["thread-id"],
                auth: main!.headers.authorization,
              }).toEqual({ session: thread, thread, auth: "Bearer sk-upstream" });
              expect(main!.headers["x-codex-turn-metadata"]).toContain(thread);
            }
            await expectBilled(gw, lane);
          } finally {
            r.cleanup();
          }
        },
        TEST_MS,
      );

      test.concurrent(
        `${name}: a tool round trip through a ${kind} channel`,
        async () => {
          const lane = await gw.lane(kind);
          const marker = `MARKER-${Math.random().toString(36).slice(2, 8)}`;
          // The default model's exec runs JavaScript in an isolate; the second model's exec_command runs a shell.
          const directive =
            model === null
              ? `#tool exec ${JSON.stringify(`text("${marker}-" + String(6 * 7))`)}`
              : `#tool exec_command ${JSON.stringify({ cmd: "cat marker.txt" })}`;
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
        },
        TEST_MS,
      );
    }
  }
});
