// Multi-key channels and channel automation driven by live relay traffic (not only by channel tests):
// the relay rotates a channel's keys, sets a failing key aside, and disables a channel only after
// repeated failures within the window. Also: a one-document key (Vertex JSON) is never split by line.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";
import { relayState } from "../../server/relay/state.ts";
import { multiKeyInfo, parseChannelInfo } from "../../server/modules/channel/keys.ts";
import { makeServiceAccount, startVertexUpstream, type VertexMock } from "../mocks/vertex-upstream.ts";

let fx: RelayFixture;
let keyed: ReturnType<typeof Bun.serve>;
/** Authorization headers the key-aware upstream saw, in order. */
const seenKeys: string[] = [];

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  // An OpenAI-format upstream that refuses the key "bad-key" and answers every other key.
  keyed = Bun.serve({
    port: 0,
    async fetch(req) {
      const key = (req.headers.get("authorization") ?? "").replace(/^Bearer /, "");
      seenKeys.push(key);
      const body: any = await req.json();
      if (key === "bad-key")
        return Response.json(
          { error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } },
          { status: 401 },
        );
      return Response.json({
        id: "x",
        object: "chat.completion",
        created: 1,
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      });
    },
  });
  await fx.option(
    "ModelRatio",
    JSON.stringify({ "mk-poll": 1, "mk-aside": 1, "mk-broken": 1, "mk-one-bad": 1, "gemini-2.5-flash": 1 }),
  );
});

afterAll(async () => {
  keyed.stop(true);
  await fx.close();
});

const chat = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }] });

async function channelRow(id: number) {
  return fx.ctx.deps.db.selectFrom("channels").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}

/** Automation runs off the response path: wait until the channel row shows its effect. */
/** Waits until the channel's row shows the state and the relay routes on that row (the change is announced
 * right after the write, so the relay's table may lag the database by a moment). */
async function until(id: number, done: (row: Awaited<ReturnType<typeof channelRow>>) => boolean) {
  for (let i = 0; i < 100; i++) {
    const row = await channelRow(id);
    const routed = (await relayState(fx.ctx.deps).routing.get()).channels.get(id);
    if (done(row) && (row.status !== 1 || (routed && done(routed)))) return row;
    await Bun.sleep(20);
  }
  throw new Error(`channel ${id} never reached the expected state`);
}

describe("multi-key channels in live traffic", () => {
  test("polling mode sends each call to the next key, round-robin", async () => {
    await fx.channel({
      base_url: `http://127.0.0.1:${keyed.port}`,
      key: "k1\nk2\nk3",
      models: ["mk-poll"],
      channel_info: multiKeyInfo(3, "polling"),
    });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id);
    seenKeys.length = 0;
    for (let i = 0; i < 6; i++)
      expect((await fx.call("/v1/chat/completions", token.key, chat("mk-poll"))).status).toBe(200);
    expect(seenKeys).toEqual(["k1", "k2", "k3", "k1", "k2", "k3"]);
  });

  test("a key the upstream refuses is set aside; the channel stays enabled and the other keys serve", async () => {
    await fx.option("AutomaticDisableChannelEnabled", "true");
    const id = await fx.channel({
      base_url: `http://127.0.0.1:${keyed.port}`,
      key: "good-a\nbad-key\ngood-b",
      models: ["mk-aside"],
      channel_info: multiKeyInfo(3, "polling"),
    });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id);
    seenKeys.length = 0;
    expect((await fx.call("/v1/chat/completions", token.key, chat("mk-aside"))).status).toBe(200);
    const refused = await fx.call("/v1/chat/completions", token.key, chat("mk-aside"));
    expect(refused.status).toBe(401);
    expect(JSON.stringify(await refused.json())).not.toContain("bad-key");
    const row = await until(id, (r) => parseChannelInfo(r.channel_info).multi_key_failed_at["1"] !== undefined);
    expect(row.status).toBe(1);
    seenKeys.length = 0;
    for (let i = 0; i < 4; i++)
      expect((await fx.call("/v1/chat/completions", token.key, chat("mk-aside"))).status).toBe(200);
    expect(seenKeys).not.toContain("bad-key");
    expect(new Set(seenKeys)).toEqual(new Set(["good-a", "good-b"]));
  });
});

describe("automatic disable from relay failures", () => {
  test("one refused call only counts; the third within the window disables the channel with the reason", async () => {
    await fx.option("AutomaticDisableChannelEnabled", "true");
    const id = await fx.channel({ base_url: `http://127.0.0.1:${keyed.port}`, key: "bad-key", models: ["mk-broken"] });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id);
    for (let i = 0; i < 2; i++)
      expect((await fx.call("/v1/chat/completions", token.key, chat("mk-broken"))).status).toBe(401);
    await Bun.sleep(100);
    expect((await channelRow(id)).status).toBe(1);
    expect((await fx.call("/v1/chat/completions", token.key, chat("mk-broken"))).status).toBe(401);
    const row = await until(id, (r) => r.status === 3);
    expect(JSON.parse(row.other_info ?? "{}").status_reason).toContain("authentication failed (401)");
    // Out of routing now: the model has no channel left.
    expect((await fx.call("/v1/chat/completions", token.key, chat("mk-broken"))).status).toBe(503);
  });

  test("with the option off, failures never disable", async () => {
    await fx.option("AutomaticDisableChannelEnabled", "false");
    const id = await fx.channel({ base_url: `http://127.0.0.1:${keyed.port}`, key: "bad-key", models: ["mk-one-bad"] });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id);
    for (let i = 0; i < 4; i++)
      expect((await fx.call("/v1/chat/completions", token.key, chat("mk-one-bad"))).status).toBe(401);
    await Bun.sleep(100);
    expect((await channelRow(id)).status).toBe(1);
  });
});

describe("single-document keys", () => {
  let vertex: VertexMock;
  beforeAll(() => {
    vertex = startVertexUpstream();
  });
  afterAll(() => vertex.stop());

  test("a pretty-printed Vertex service account is used whole, not line by line", async () => {
    const sa = await makeServiceAccount(vertex.url + "/token");
    vertex.trust(sa);
    await fx.channel({
      type: 41,
      base_url: vertex.url,
      key: JSON.stringify(sa.json, null, 2),
      models: ["gemini-2.5-flash"],
      model_mapping: {},
    });
    const user = await fx.user(10_000_000);
    const token = await fx.token(user.id);
    const res = await fx.call("/v1/chat/completions", token.key, chat("gemini-2.5-flash"));
    expect(res.status).toBe(200);
    expect(vertex.issued.length).toBe(1);
  });
});
