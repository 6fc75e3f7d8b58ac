// Image URLs in prompts are fetched by the gateway for Gemini channels (Gemini wants the bytes inline), so
// the client chooses where the gateway connects. Through the whole relay: a local, link-local or metadata
// address, or a redirect to one, is refused with a 400 in the caller's own error format before any
// upstream call, and nothing is billed; the fetch_setting.* options open local addresses when the operator
// wants them (here: the test's own image server on 127.0.0.1).
import { afterEach, describe, expect, test } from "bun:test";
import { callAsNewUser, NEW_USER_QUOTA, ratios, sharedRelayFixture, tokenRow, userRow } from "./fixtures.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { serve } from "../mocks/recorder.ts";
import { OPTION_DEFAULTS } from "../../server/modules/option/defaults.ts";
import { LOCAL_FETCHES } from "../helpers/outbound.ts";

const MODEL = "gem-img";
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
const relay = sharedRelayFixture(async (fx) => {
  const gemini = startGeminiUpstream();
  await fx.channel({ type: 24, key: "gemini-key", base_url: gemini.url, models: [MODEL] });
  await ratios(fx, [MODEL], 1);
  const images = serve((req) => {
    const path = new URL(req.url).pathname;
    if (path === "/to-metadata")
      return new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/iam/" } });
    if (path === "/to-loopback")
      return new Response(null, {
        status: 302,
        headers: { location: `http://[::1]:${new URL(req.url).port}/cat.png` },
      });
    return new Response(PNG, { headers: { "content-type": "image/png" } });
  });
  return { gemini, images };
});

afterEach(async () => {
  for (const key of Object.keys(OPTION_DEFAULTS)) {
    if (key.startsWith("fetch_setting.")) await relay.fx.option(key, OPTION_DEFAULTS[key]!);
  }
});

const openai = (url: string) => ({
  model: MODEL,
  max_tokens: 5,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url } },
      ],
    },
  ],
});
const claude = (url: string) => ({
  model: MODEL,
  max_tokens: 5,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image", source: { type: "url", url } },
      ],
    },
  ],
});

/** A refused call: the caller's error format, status 400, the reason, no upstream call, nothing billed. */
async function refused(path: string, body: unknown, reason: string) {
  const upstreamBefore = relay.gemini.requests.length;
  const { status, text, user, logs } = await callAsNewUser(relay.fx, path, body);
  expect(status).toBe(400);
  const err = JSON.parse(text);
  if (path === "/v1/messages") {
    expect(err.type).toBe("error");
    expect(err.error.message).toContain(`image download failed: ${reason}`);
  } else {
    expect(err.error.message).toContain(`image download failed: ${reason}`);
    expect(err.error.type).toBeDefined();
  }
  expect(relay.gemini.requests.length).toBe(upstreamBefore);
  expect(logs.filter((l) => l.type === 2)).toHaveLength(0);
  expect((await userRow(relay.fx, user.id)).quota).toBe(NEW_USER_QUOTA);
  const token = await relay.fx.ctx.deps.db
    .selectFrom("tokens")
    .select("id")
    .where("user_id", "=", user.id)
    .executeTakeFirstOrThrow();
  expect((await tokenRow(relay.fx, token.id)).remain_quota).toBe(NEW_USER_QUOTA);
}

describe("image URLs in prompts, by default", () => {
  test("loopback (IPv4 and IPv6), link-local and metadata addresses: 400 in OpenAI format, nothing billed", async () => {
    const port = new URL(relay.images.url).port;
    await refused("/v1/chat/completions", openai(`http://127.0.0.1:${port}/cat.png`), "port");
    await relay.fx.option("fetch_setting.allowed_ports", "[]");
    await refused(
      "/v1/chat/completions",
      openai(`http://127.0.0.1:${port}/cat.png`),
      "127.0.0.1 is a private or local address",
    );
    await refused("/v1/chat/completions", openai(`http://[::1]:${port}/cat.png`), "::1 is a private or local address");
    await refused(
      "/v1/chat/completions",
      openai("http://169.254.169.254/latest/meta-data/"),
      "169.254.169.254 is a cloud metadata address",
    );
    await refused(
      "/v1/chat/completions",
      openai("http://169.254.10.10/x.png"),
      "169.254.10.10 is a private or local address",
    );
    await refused("/v1/chat/completions", openai("http://2130706433/x.png"), "127.0.0.1 is a private or local address");
    await refused(
      "/v1/chat/completions",
      openai("http://localhost/x.png"),
      "localhost resolves to a private or local address",
    );
  });

  test("a Claude-format client gets the refusal as a Claude error", async () => {
    await refused(
      "/v1/messages",
      claude("http://169.254.169.254/latest/meta-data/"),
      "169.254.169.254 is a cloud metadata address",
    );
  });
});

describe("image URLs with the options opened for a local image server", () => {
  test("allow_private_ip (and every port): the image is downloaded, sent inline and the call billed", async () => {
    for (const [k, v] of Object.entries(LOCAL_FETCHES)) await relay.fx.option(k, v);
    const { status, logs } = await callAsNewUser(
      relay.fx,
      "/v1/chat/completions",
      openai(relay.images.url + "/cat.png"),
    );
    expect(status).toBe(200);
    const parts = relay.gemini.last().body.contents[0].parts;
    expect(parts[1]).toEqual({ inlineData: { mimeType: "image/png", data: Buffer.from(PNG).toString("base64") } });
    expect(logs.filter((l) => l.type === 2)).toHaveLength(1);
  });

  test("a redirect is checked again: to a metadata address, or off the IP whitelist, is refused", async () => {
    for (const [k, v] of Object.entries(LOCAL_FETCHES)) await relay.fx.option(k, v);
    await refused(
      "/v1/chat/completions",
      openai(relay.images.url + "/to-metadata"),
      "169.254.169.254 is a cloud metadata address",
    );
    // Only the image host (here 127.0.0.1) on the whitelist: its redirect to [::1] is refused.
    await relay.fx.option("fetch_setting.ip_filter_mode", "true");
    await relay.fx.option("fetch_setting.ip_list", JSON.stringify(["127.0.0.1"]));
    await refused(
      "/v1/chat/completions",
      openai(relay.images.url + "/to-loopback"),
      "::1 is an address that is not on the IP whitelist",
    );
    const { status } = await callAsNewUser(relay.fx, "/v1/chat/completions", openai(relay.images.url + "/cat.png"));
    expect(status).toBe(200);
  });
});
