// GET /v1/realtime through the gateway, listening over TLS (the openai SDK's realtime clients always dial
// wss://): the SDK's OpenAIRealtimeWS (key in Authorization) to an OpenAI channel, and a plain websocket
// speaking the same events with the browser's subprotocol key to an Azure channel. Events pass both ways;
// every response.done is billed from its usage (text and audio tokens at their ratios) as it arrives, with a
// consume log marked is_stream; a session whose balance runs out is told so and closed; a client that leaves
// mid-response has it cancelled upstream and pays for what was produced.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { OpenAIRealtimeWS } from "openai/realtime/ws";
import { relayFixture, logsOf, userRow, type RelayFixture } from "../relay/fixtures.ts";
import { RT_CANCELLED_USAGE, RT_USAGE, startRealtimeUpstream, type RealtimeMock } from "../mocks/realtime-upstream.ts";

const TLS = {
  key: await Bun.file(`${import.meta.dir}/../helpers/tls/localhost.key`).text(),
  cert: await Bun.file(`${import.meta.dir}/../helpers/tls/localhost.crt`).text(),
};

let fx: RelayFixture;
let up: RealtimeMock;
let base: string;

/** ratio 1, completion 2, AudioRatio 8, AudioCompletionRatio 2 for every test model. */
const MODELS = ["rt-openai", "rt-azure", "rt-broke", "rt-slow"];
/** RT_USAGE at those ratios: 20 text in + 20 cached (cache ratio 1) + 80 audio in × 8 + 30 text out × 2 + 120 audio out × 8 × 2. */
const RT_QUOTA = 20 + 20 + 80 * 8 + 30 * 2 + 120 * 8 * 2;
/** The hold a session keeps for its next response: 1024 audio output tokens. */
const HOLD = 1024 * 8 * 2;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  up = startRealtimeUpstream();
  const each = (v: number) => JSON.stringify(Object.fromEntries(MODELS.map((m) => [m, v])));
  await fx.option("ModelRatio", each(1));
  await fx.option("CompletionRatio", each(2));
  await fx.option("AudioRatio", each(8));
  await fx.option("AudioCompletionRatio", each(2));
  await fx.channel({
    type: 1,
    key: "sk-rt-channel",
    base_url: up.url,
    models: ["rt-openai", "rt-broke", "rt-slow"],
    model_mapping: { "rt-openai": "gpt-realtime", "rt-slow": "gpt-realtime-slow" },
  });
  const azure = await fx.channel({
    type: 3,
    key: "azure-rt-key",
    base_url: up.url,
    models: ["rt-azure"],
    model_mapping: { "rt-azure": "gpt-4o-realtime-preview" },
  });
  await fx.ctx.deps.db.updateTable("channels").set({ other: "2025-04-01-preview" }).where("id", "=", azure).execute();
  const app = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1", tls: TLS } as any);
  base = `https://127.0.0.1:${app.server!.port}`;
});

afterAll(async () => {
  await fx.ctx.app.stop(true);
  up.stop();
  await fx.close();
});

async function funded(quota: number) {
  const user = await fx.user(quota);
  return { user, key: (await fx.token(user.id, { remain_quota: quota })).key };
}

/** Resolves with the first event of that type (or the close, if the socket closes first). */
function next(rt: { on(ev: string, fn: (e: any) => void): unknown }, type: string): Promise<any> {
  return new Promise((resolve) => rt.on(type, resolve));
}

describe("the openai SDK's realtime client (OpenAIRealtimeWS, key in Authorization) on an OpenAI channel", () => {
  test("events pass both ways; each response is billed from its usage with a consume log", async () => {
    const { user, key } = await funded(1_000_000);
    const client = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, dangerouslyAllowBrowser: true });
    const rt = new OpenAIRealtimeWS({ model: "rt-openai", options: { rejectUnauthorized: false } as any }, client);
    const errors: unknown[] = [];
    rt.on("error", (e) => errors.push(e));
    const created = await next(rt, "session.created");
    expect(created.session.model).toBe("gpt-realtime");
    const sent = up.received.length;
    rt.send({ type: "session.update", session: { type: "realtime", instructions: "Be brief." } } as any);
    expect((await next(rt, "session.updated")).session.instructions).toBe("Be brief.");
    let text = "";
    rt.on("response.output_text.delta", (e: any) => (text += e.delta));
    rt.send({ type: "response.create" } as any);
    const done = await next(rt, "response.done");
    expect(done.response.usage).toEqual(RT_USAGE);
    expect(text).toBe("Hello realtime");
    rt.send({ type: "response.create" } as any);
    await next(rt, "response.done");
    rt.close();
    expect(up.received.slice(sent).map((e) => e.type)).toEqual([
      "session.update",
      "response.create",
      "response.create",
    ]);
    const upgrade = up.upgrades.at(-1)!;
    expect(upgrade).toMatchObject({ path: "/v1/realtime?model=gpt-realtime", authorization: "Bearer sk-rt-channel" });
    expect(errors).toEqual([]);

    await Bun.sleep(50);
    await fx.flush();
    const logs = await logsOf(fx, user.id);
    expect(
      logs.map((l) => [l.type, l.model_name, l.quota, l.prompt_tokens, l.completion_tokens, Boolean(l.is_stream)]),
    ).toEqual([
      [2, "rt-openai", RT_QUOTA, 120, 150, true],
      [2, "rt-openai", RT_QUOTA, 120, 150, true],
    ]);
    expect(JSON.parse(logs[0]!.other!)).toMatchObject({
      realtime: true,
      audio_ratio: 8,
      audio_completion_ratio: 2,
      audio_input: 80,
      audio_output: 120,
      upstream_model_name: "gpt-realtime",
    });
    // Everything held for the next response went back when the session ended.
    expect(Number((await userRow(fx, user.id)).quota)).toBe(1_000_000 - 2 * RT_QUOTA);
  });
});

describe("a plain websocket with the browser's subprotocol key, on an Azure channel", () => {
  test("the subprotocol 'realtime' is chosen, the key never echoed; Azure gets its deployment and api-key", async () => {
    const { user, key } = await funded(1_000_000);
    const ws = new WebSocket(`${base.replace("https", "wss")}/v1/realtime?model=rt-azure`, {
      protocols: ["realtime", `openai-insecure-api-key.${key}`, "openai-beta.realtime-v1"],
      tls: { rejectUnauthorized: false },
    } as any);
    const events: any[] = [];
    const seen = (type: string) =>
      new Promise<any>((resolve) =>
        ws.addEventListener("message", (m) => {
          const ev = JSON.parse(String(m.data));
          if (ev.type === type) resolve(ev);
        }),
      );
    ws.addEventListener("message", (m) => events.push(JSON.parse(String(m.data))));
    const created = seen("session.created");
    await new Promise((resolve) => ws.addEventListener("open", resolve, { once: true }));
    expect(ws.protocol).toBe("realtime");
    await created;
    ws.send(
      JSON.stringify({
        type: "conversation.item.create",
        item: { type: "message", role: "user", content: [{ type: "input_text", text: "Hi" }] },
      }),
    );
    await seen("conversation.item.created");
    ws.send(JSON.stringify({ type: "response.create" }));
    await seen("response.done");
    ws.close(1000);
    expect(up.upgrades.at(-1)).toMatchObject({
      path: "/openai/realtime?api-version=2025-04-01-preview&deployment=gpt-4o-realtime-preview",
      apiKey: "azure-rt-key",
      authorization: null,
      beta: "realtime=v1",
    });
    expect(events.map((e) => e.type)).toEqual([
      "session.created",
      "conversation.item.created",
      "response.created",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.done",
    ]);
    await Bun.sleep(50);
    await fx.flush();
    expect((await logsOf(fx, user.id)).map((l) => [l.model_name, l.quota])).toEqual([["rt-azure", RT_QUOTA]]);
  });
});

describe("quota and leaving", () => {
  test("when the balance cannot hold the next response, the client gets an error event and the session is closed", async () => {
    // Enough for the session's first hold, not for the next one after the first response is paid.
    const { user, key } = await funded(HOLD + RT_QUOTA - 1);
    const client = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, dangerouslyAllowBrowser: true });
    const rt = new OpenAIRealtimeWS({ model: "rt-broke", options: { rejectUnauthorized: false } as any }, client);
    const error = new Promise<any>((resolve) => rt.on("error", resolve));
    const closed = new Promise<number>((resolve) => rt.socket.on("close", (code: number) => resolve(code)));
    await next(rt, "session.created");
    const closedUpstream = up.closed;
    rt.send({ type: "response.create" } as any);
    await next(rt, "response.done");
    const err = await error;
    expect(err.error).toMatchObject({ type: "insufficient_quota" });
    expect(err.message).toContain("quota is not enough");
    expect(await closed).toBe(1008);
    await Bun.sleep(50);
    expect(up.closed).toBe(closedUpstream + 1);
    await fx.flush();
    expect((await logsOf(fx, user.id)).map((l) => l.quota)).toEqual([RT_QUOTA]);
    expect(Number((await userRow(fx, user.id)).quota)).toBe(HOLD - 1);
  });

  test("a session the balance cannot hold at all is refused before the upgrade (403)", async () => {
    const { key } = await funded(HOLD - 1);
    const res = await fetch(`${base}/v1/realtime?model=rt-openai`, {
      headers: {
        authorization: `Bearer ${key}`,
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
      },
      tls: { rejectUnauthorized: false },
    } as any);
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe("insufficient_token_quota");
  });

  test("a client leaving mid-response: the response is cancelled upstream and what it produced is billed", async () => {
    const { user, key } = await funded(1_000_000);
    const client = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, dangerouslyAllowBrowser: true });
    const rt = new OpenAIRealtimeWS({ model: "rt-slow", options: { rejectUnauthorized: false } as any }, client);
    await next(rt, "session.created");
    rt.send({ type: "response.create" } as any);
    await next(rt, "response.output_text.delta");
    rt.close();
    await Bun.sleep(200);
    expect(up.received.at(-1).type).toBe("response.cancel");
    await fx.flush();
    const [log] = await logsOf(fx, user.id);
    expect([log!.prompt_tokens, log!.completion_tokens]).toEqual([
      RT_CANCELLED_USAGE.input_tokens,
      RT_CANCELLED_USAGE.output_tokens,
    ]);
    expect(log!.quota).toBe(40 + 5 * 2 + 15 * 8 * 2);
  });

  test("a bad key and an unknown model answer HTTP errors before any upstream socket", async () => {
    const upgrades = up.upgrades.length;
    const handshake = (path: string, key: string) =>
      fetch(`${base}${path}`, {
        headers: {
          authorization: `Bearer ${key}`,
          upgrade: "websocket",
          connection: "Upgrade",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          "sec-websocket-version": "13",
        },
        tls: { rejectUnauthorized: false },
      } as any);
    expect((await handshake("/v1/realtime?model=rt-openai", "sk-wrong")).status).toBe(401);
    const { key } = await funded(1_000_000);
    const unknown = await handshake("/v1/realtime?model=rt-nobody", key);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as any).error.code).toBe("model_not_found");
    expect((await handshake("/v1/realtime", key)).status).toBe(400);
    expect(up.upgrades.length).toBe(upgrades);
  });
});
