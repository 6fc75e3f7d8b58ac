// A new user's gateway has no prices of its own: the default catalogue must price the models the coding
// agents ask for when told nothing, or every call is refused (or, for Gemini CLI, silently sent to its larger
// model). Each CLI runs once, through a channel of its own provider, on a gateway with no ratio set.
import { describe, expect, test } from "bun:test";
import { modelOf } from "../mocks/agent-upstreams.ts";
import { agentGateway, describeRun, expectCharged, tempHome } from "./harness.ts";
import {
  claude,
  CLAUDE_CODE_MODEL,
  codex,
  CODEX_MODEL,
  gemini,
  GEMINI_ROUTER_MODEL,
  GEMINI_SIMPLE_MODEL,
  TEST_MS,
} from "./clis.ts";

const gw = agentGateway({ prices: false });

describe("the default catalogue prices what the agents ask for", () => {
  test.concurrent(
    `Claude Code (${CLAUDE_CODE_MODEL})`,
    async () => {
      const lane = await gw.lane("claude");
      const t = tempHome("claude");
      try {
        const { run, out } = await claude(lane, "Say hello.", t.work, t.home);
        expect(out?.is_error, describeRun(run, lane)).toBe(false);
        expect(lane.mock.answered().map(modelOf)).toContain(CLAUDE_CODE_MODEL);
        await expectCharged(gw, lane);
      } finally {
        t.cleanup();
      }
    },
    TEST_MS,
  );

  test.concurrent(
    `Codex (${CODEX_MODEL})`,
    async () => {
      const lane = await gw.lane("openai");
      const r = await codex(lane, "Say hello.", null);
      try {
        expect(r.messages, describeRun(r.run, lane)).toEqual([lane.mock.text]);
        expect(lane.mock.answered().map(modelOf)).toEqual([CODEX_MODEL]);
        await expectCharged(gw, lane);
      } finally {
        r.cleanup();
      }
    },
    TEST_MS,
  );

  test.concurrent(
    `Gemini CLI (${GEMINI_ROUTER_MODEL}, then ${GEMINI_SIMPLE_MODEL})`,
    async () => {
      const lane = await gw.lane("gemini");
      const r = await gemini(lane, "Say hello.");
      try {
        expect(r.out?.response, describeRun(r.run, lane)).toBe(lane.mock.text);
        expect(lane.mock.answered().map(modelOf)).toEqual([GEMINI_ROUTER_MODEL, GEMINI_SIMPLE_MODEL]);
        await expectCharged(gw, lane);
      } finally {
        r.cleanup();
      }
    },
    TEST_MS,
  );
});
