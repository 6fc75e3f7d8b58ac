// The client's address in usage logs: kept only for a user who asked for it (new-api's user setting
// record_ip_log, "Privacy" in the console's personal settings), in consume and error logs, whichever way the
// call came in (the server's native route table, Elysia under app.handle(), a Claude-format route). A token's
// IP allow list is checked whatever the setting.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, ratios, logsOf, type RelayFixture } from "./fixtures.ts";
import { settingFlag } from "../../server/relay/auth.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";
import type { Session } from "../helpers/app.ts";

const MODEL = "ip-model";
const FAILING = "ip-model-fail-500";

let fx: RelayFixture;
let server: { stop(force?: boolean): unknown; server: { port?: number } | null };
let base = "";

beforeAll(async () => {
  fx = await relayFixture("sqlite", {}, { trustProxy: true });
  await ratios(fx, [MODEL, FAILING], 1, 1);
  await fx.channel({ base_url: fx.mock.url, models: [MODEL, FAILING] });
  await fx.option("LogErrorEnabled", "true");
  server = fx.ctx.app.listen({ port: 0, hostname: "127.0.0.1" }) as any;
  base = `http://127.0.0.1:${server.server!.port}`;
});

afterAll(async () => {
  await server?.stop(true);
  await fx?.close();
});

const chat = (model: string, stream = false) => ({ model, stream, messages: [{ role: "user", content: "hi" }] });

function overSocket(path: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

async function saveRecordIp(user: Session, on: boolean) {
  const r = await fx.ctx.request("PUT", "/api/user/setting", { as: user, body: { record_ip_log: on } });
  expect(r.body.success).toBe(true);
}

/** Each call of `calls` answered with `status`; then the user's logs since `from`. */
async function logsAfter(userId: number, from: number, calls: Promise<Response>[]) {
  for (const res of await Promise.all(calls)) await res.arrayBuffer();
  await fx.flush();
  return (await logsOf(fx, userId)).filter((l) => l.id > from);
}

const lastLogId = async (userId: number) => (await logsOf(fx, userId)).at(-1)?.id ?? 0;

describe("the client's address in usage logs", () => {
  test("settingFlag reads a true/false field of a user's settings JSON", () => {
    expect(settingFlag(JSON.stringify({ record_ip_log: true }), "record_ip_log")).toBe(true);
    expect(
      settingFlag(JSON.stringify({ record_ip_log: false, accept_unset_model_ratio_model: true }), "record_ip_log"),
    ).toBe(false);
    expect(
      settingFlag(JSON.stringify({ accept_unset_model_ratio_model: true }), "accept_unset_model_ratio_model"),
    ).toBe(true);
    expect(settingFlag("", "record_ip_log")).toBe(false);
    expect(settingFlag(null, "record_ip_log")).toBe(false);
    expect(settingFlag("{not json", "record_ip_log")).toBe(false);
  });

  test("a user who did not ask keeps no address: consume and error logs, every route", async () => {
    const user = await fx.user(1e9);
    const { key } = await fx.token(user.id, { unlimited_quota: true });
    const from = await lastLogId(user.id);
    const logs = await logsAfter(user.id, from, [
      overSocket("/v1/chat/completions", key, chat(MODEL)),
      overSocket("/v1/chat/completions", key, chat(MODEL, true)),
      overSocket("/v1/chat/completions", key, chat(FAILING)),
      overSocket("/v1/messages", key, { model: MODEL, max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
      fx.call("/v1/chat/completions", key, chat(MODEL)),
    ]);
    expect(logs.filter((l) => l.type === LOG_TYPE.consume).length).toBe(4);
    expect(logs.filter((l) => l.type === LOG_TYPE.error).length).toBe(1);
    expect(logs.map((l) => l.ip)).toEqual(logs.map(() => ""));
  });

  test("a user who turned it on gets the address of each call in consume and error logs; turned off again, none", async () => {
    const user = await fx.user(1e9);
    const { key } = await fx.token(user.id, { unlimited_quota: true });
    await saveRecordIp(user, true);
    const self = await fx.ctx.request("GET", "/api/user/self", { as: user });
    expect(JSON.parse(self.body.data.setting).record_ip_log).toBe(true);

    let from = await lastLogId(user.id);
    const socketLogs = await logsAfter(user.id, from, [
      overSocket("/v1/chat/completions", key, chat(MODEL)),
      overSocket("/v1/chat/completions", key, chat(MODEL, true)),
      overSocket("/v1/chat/completions", key, chat(FAILING)),
      overSocket("/v1/messages", key, { model: MODEL, max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
    ]);
    expect(socketLogs.length).toBe(4);
    expect(socketLogs.some((l) => l.type === LOG_TYPE.error)).toBe(true);
    for (const l of socketLogs) expect(l.ip).toMatch(/^(::ffff:)?127\.0\.0\.1$/);

    // Behind a trusted proxy (TRUST_PROXY, on here), the address it forwarded.
    from = await lastLogId(user.id);
    const forwarded = await logsAfter(user.id, from, [
      fx.call("/v1/chat/completions", key, chat(MODEL), { "x-forwarded-for": "203.0.113.7" }),
    ]);
    expect(forwarded.map((l) => l.ip)).toEqual(["203.0.113.7"]);

    await saveRecordIp(user, false);
    from = await lastLogId(user.id);
    const off = await logsAfter(user.id, from, [overSocket("/v1/chat/completions", key, chat(MODEL))]);
    expect(off.map((l) => l.ip)).toEqual([""]);
  });

  test("a token's IP allow list is checked whether or not the address is logged", async () => {
    const user = await fx.user(1e9);
    const allowed = await fx.token(user.id, { unlimited_quota: true, allow_ips: "127.0.0.1" });
    const elsewhere = await fx.token(user.id, { unlimited_quota: true, allow_ips: "10.9.9.9" });
    expect((await overSocket("/v1/chat/completions", allowed.key, chat(MODEL))).status).toBe(200);
    const denied = await overSocket("/v1/chat/completions", elsewhere.key, chat(MODEL));
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as any).error.message).toContain("127.0.0.1");
  });
});
