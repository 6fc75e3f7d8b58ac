// Claude Code (`claude -p`, its default tool set), unchanged, pointed at Switchyard with ANTHROPIC_BASE_URL and
// an sk- key, through each channel kind: a plain answer, and a tool round trip in which the model asks for
// the Read tool, Claude Code reads the file and sends its content back, and the final answer quotes it.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { modelOf } from "../mocks/agent-upstreams.ts";
import { agentGateway, describeRun, expectBilled, KINDS, tempHome, writeFile } from "./harness.ts";
import { claude, CLAUDE_CODE_MODEL, TEST_MS } from "./clis.ts";

const gw = agentGateway();

describe("claude -p", () => {
  for (const kind of KINDS) {
    test.concurrent(
      `a plain answer through a ${kind} channel`,
      async () => {
        const lane = await gw.lane(kind);
        const { home, work, cleanup } = tempHome("claude");
        try {
          const { run, out } = await claude(lane, "Say hello.", work, home);
          expect(out?.is_error, describeRun(run, lane)).toBe(false);
          expect(out.result).toBe(lane.mock.text);
          const main = lane.mock.calls().find((c) => JSON.stringify(c.body).includes("Say hello."));
          expect(main, describeRun(run, lane)).toBeDefined();
          expect(modelOf(main!)).toBe(CLAUDE_CODE_MODEL);
          if (kind === "claude") {
            expect(main!.body.messages.some((m: any) => m.role === "system")).toBe(true);
            // Its cache breakpoints reach the upstream that caches.
            expect(main!.body.system.some((b: any) => b.cache_control?.type === "ephemeral")).toBe(true);
          }
          await expectBilled(gw, lane);
        } finally {
          cleanup();
        }
      },
      TEST_MS,
    );

    test.concurrent(
      `a Read tool round trip through a ${kind} channel`,
      async () => {
        const lane = await gw.lane(kind);
        const { home, work, cleanup } = tempHome("claude");
        try {
          const marker = `MARKER-${kind}-${Math.random().toString(36).slice(2, 8)}`;
          const file = join(work, "marker.txt");
          writeFile(file, `${marker}\n`);
          const { run, out } = await claude(
            lane,
            `Read the marker file. #tool Read ${JSON.stringify({ file_path: file })}`,
            work,
            home,
          );
          expect(out?.is_error, describeRun(run, lane)).toBe(false);
          expect(out.result).toStartWith("Tool said: ");
          expect(out.result).toContain(marker);
          // The file's content went back to the upstream as the tool's result.
          const calls = lane.mock.calls();
          expect(calls.length, describeRun(run, lane)).toBeGreaterThanOrEqual(2);
          expect(JSON.stringify(calls.at(-1)!.body)).toContain(marker);
          await expectBilled(gw, lane);
        } finally {
          cleanup();
        }
      },
      TEST_MS,
    );
  }

  test(
    "passes Claude Code's query and headers to a Claude upstream, and never its key",
    async () => {
      const lane = await gw.lane("claude");
      const { home, work, cleanup } = tempHome("claude");
      try {
        const { run, out } = await claude(lane, "Say hello.", work, home);
        expect(out?.is_error, describeRun(run, lane)).toBe(false);
        const main = lane.mock.calls().find((c) => JSON.stringify(c.body).includes("Say hello."))!;
        const sent = {
          search: main.search,
          beta: main.headers["anthropic-beta"]?.includes("claude-code-20250219"),
          session: main.headers["x-claude-code-session-id"],
          key: main.headers["x-api-key"],
        };
        expect(sent).toEqual({ search: "?beta=true", beta: true, session: out.session_id, key: "claude-key" });
        expect(JSON.stringify(main.headers)).not.toContain(lane.key.slice(3));
        await expectBilled(gw, lane);
      } finally {
        cleanup();
      }
    },
    TEST_MS,
  );

  test(
    "on an OpenAI channel that maps its model to a reasoning model",
    async () => {
      // Claude Code thinks (adaptive thinking, a large max_tokens): OpenAI's reasoning models take
      // max_completion_tokens and a reasoning effort, and refuse max_tokens.
      const lane = await gw.lane("openai", { mapping: { [CLAUDE_CODE_MODEL]: "gpt-5.1" } });
      const { home, work, cleanup } = tempHome("claude");
      try {
        const { run, out } = await claude(lane, "Say hello.", work, home);
        expect(out?.is_error, describeRun(run, lane)).toBe(false);
        expect(out.result).toBe(lane.mock.text);
        const main = lane.mock.calls().find((c) => JSON.stringify(c.body).includes("Say hello."))!;
        expect({
          model: main.body.model,
          maxTokens: main.body.max_tokens,
          hasLimit: typeof main.body.max_completion_tokens,
        }).toEqual({ model: "gpt-5.1", maxTokens: undefined, hasLimit: "number" });
        await expectBilled(gw, lane);
      } finally {
        cleanup();
      }
    },
    TEST_MS,
  );
});
