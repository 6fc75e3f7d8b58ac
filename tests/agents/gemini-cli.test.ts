// Gemini CLI (`gemini -p`), unchanged, pointed at Switchyard with GOOGLE_GEMINI_BASE_URL and an sk- key as its
// Gemini API key, through each channel kind. Before each prompt it asks a small model to rate the prompt's
// complexity (a JSON answer to a schema written with Gemini's upper-case type names) and picks the model for
// the prompt from that; when the rating call fails it silently takes another model. So besides the answer,
// each test checks that the rating call reached the upstream (with a schema the upstream accepts), was
// answered, and that the prompt then went to the model the rating chose.
import { describe, expect, test } from "bun:test";
import { modelOf } from "../mocks/agent-upstreams.ts";
import { agentGateway, describeRun, expectBilled, KINDS } from "./harness.ts";
import { gemini, GEMINI_ROUTER_MODEL, GEMINI_SIMPLE_MODEL, TEST_MS } from "./clis.ts";
import type { Recorded } from "../mocks/recorder.ts";

const gw = agentGateway();

/** The rating call: the one whose answer must fit a complexity schema. */
const isRouting = (c: Recorded) => JSON.stringify(c.body).includes("complexity_score");

describe("gemini -p", () => {
  for (const kind of KINDS) {
    test.concurrent(
      `a plain answer through a ${kind} channel, routed as the rating said`,
      async () => {
        const lane = await gw.lane(kind);
        const r = await gemini(lane, "Say hello.");
        try {
          expect(r.out?.response, describeRun(r.run, lane)).toBe(lane.mock.text);
          const routing = lane.mock.calls().filter(isRouting);
          expect(routing.map(modelOf), describeRun(r.run, lane)).toEqual([GEMINI_ROUTER_MODEL]);
          // Answered: no silent fallback to another model.
          expect(lane.mock.answered()).toContain(routing[0]!);
          // Gemini's upper-case type names reach a Gemini upstream as sent and any other as JSON Schema.
          const upper = /"type":"(OBJECT|STRING|INTEGER)"/.test(JSON.stringify(routing[0]!.body));
          expect(upper).toBe(kind === "gemini");
          const main = lane.mock.calls().filter((c) => !isRouting(c));
          expect(main.map(modelOf)).toEqual([GEMINI_SIMPLE_MODEL]);
          await expectBilled(gw, lane);
        } finally {
          r.cleanup();
        }
      },
      TEST_MS,
    );

    test.concurrent(
      `a read_file tool round trip through a ${kind} channel`,
      async () => {
        const lane = await gw.lane(kind);
        const marker = `MARKER-${kind}-${Math.random().toString(36).slice(2, 8)}`;
        const r = await gemini(
          lane,
          `Read the marker file. #tool read_file ${JSON.stringify({ file_path: "marker.txt" })}`,
          { "marker.txt": `${marker}\n` },
        );
        try {
          expect(r.out?.response, describeRun(r.run, lane)).toStartWith("Tool said: ");
          expect(r.out.response).toContain(marker);
          const main = lane.mock.calls().filter((c) => !isRouting(c));
          expect(JSON.stringify(main.at(-1)!.body)).toContain(marker);
          await expectBilled(gw, lane);
        } finally {
          r.cleanup();
        }
      },
      TEST_MS,
    );
  }
});
