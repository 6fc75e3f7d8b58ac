import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import {
  vertexAdaptor,
  vertexClaudeModel,
  vertexRegion,
  vertexUrl,
} from "../../server/relay/providers/vertex/index.ts";
import {
  accessToken,
  clearTokenCache,
  parseServiceAccount,
  signJwt,
} from "../../server/relay/providers/vertex/auth.ts";
import {
  makeServiceAccount,
  startVertexUpstream,
  type TestServiceAccount,
  type VertexMock,
} from "../mocks/vertex-upstream.ts";
import { channel, chunksOf, contentOf, makeCall, run } from "./harness.ts";

describe("Vertex pieces", () => {
  test("Claude model names take the @date form", () => {
    expect(vertexClaudeModel("claude-3-7-sonnet-20250219")).toBe("claude-3-7-sonnet@20250219");
    expect(vertexClaudeModel("claude-3-5-sonnet-20241022")).toBe("claude-3-5-sonnet-v2@20241022");
    expect(vertexClaudeModel("claude-sonnet-4@20250514")).toBe("claude-sonnet-4@20250514");
  });

  test("region from other: plain, per-model JSON, default; global uses the global host", () => {
    expect(vertexRegion({ channel: channel({ other: "europe-west1" }), options: {} }, "m")).toBe("europe-west1");
    expect(
      vertexRegion(
        { channel: channel({ other: '{"default":"us-east5","gemini-2.5-pro":"global"}' }), options: {} },
        "gemini-2.5-pro",
      ),
    ).toBe("global");
    expect(vertexRegion({ channel: channel({ other: '{"default":"us-east5"}' }), options: {} }, "x")).toBe("us-east5");
    expect(vertexRegion({ channel: channel({ other: "" }), options: {} }, "x")).toBe("us-central1");
    const base = { baseUrl: "", options: {} };
    expect(
      vertexUrl({ ...base, stream: true, channel: channel({ other: "us-east5" }) }, "p1", "claude-sonnet-4-20250514"),
    ).toBe(
      "https://us-east5-aiplatform.googleapis.com/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict",
    );
    expect(vertexUrl({ ...base, stream: false, channel: channel({ other: "global" }) }, "p1", "gemini-2.5-pro")).toBe(
      "https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/google/models/gemini-2.5-pro:generateContent",
    );
  });

  test("a key that is not service-account JSON is refused", () => {
    expect(() => parseServiceAccount("not json")).toThrow("service account JSON");
    expect(() => parseServiceAccount('{"client_email":"a"}')).toThrow("project_id");
  });
});

describe("Vertex against the mock token endpoint and prediction API", () => {
  let up: VertexMock;
  let sa: TestServiceAccount;
  beforeAll(async () => {
    up = startVertexUpstream();
    sa = await makeServiceAccount(up.url + "/token");
    up.trust(sa);
  });
  afterAll(() => up.stop());
  beforeEach(() => clearTokenCache());
  const call = (p: Partial<Parameters<typeof makeCall>[0]> = {}) =>
    makeCall({
      baseUrl: up.url,
      key: JSON.stringify(sa.json),
      channel: channel({ type: 41, other: "us-east5" }),
      upstreamModel: "claude-sonnet-4-20250514",
      requestModel: "claude-sonnet-4-20250514",
      ...p,
    });

  test("the JWT is RS256 with the account's claims, and the token is cached until near expiry", async () => {
    const jwt = await signJwt(parseServiceAccount(JSON.stringify(sa.json)), 1_700_000_000);
    const [h, c] = jwt.split(".");
    expect(JSON.parse(Buffer.from(h!, "base64url").toString())).toEqual({ alg: "RS256", typ: "JWT", kid: "kid-1" });
    expect(JSON.parse(Buffer.from(c!, "base64url").toString())).toEqual({
      iss: sa.json.client_email,
      scope: "https://www.googleapis.com/auth/cloud-platform",
      aud: up.url + "/token",
      iat: 1_700_000_000,
      exp: 1_700_003_600,
    });
    const before = up.issued.length;
    const account = parseServiceAccount(JSON.stringify(sa.json));
    const [t1, t2] = await Promise.all([accessToken(account), accessToken(account)]);
    const t3 = await accessToken(account);
    expect(t1).toBe(t2);
    expect(t3).toBe(t1);
    expect(up.issued.length).toBe(before + 1);
  });

  test("a token about to expire is renewed", async () => {
    const short = startVertexUpstream({ expiresIn: 60 });
    const acct = await makeServiceAccount(short.url + "/token");
    short.trust(acct);
    const a = parseServiceAccount(JSON.stringify(acct.json));
    await accessToken(a);
    await accessToken(a);
    expect(short.issued.length).toBe(2);
    short.stop();
  });

  test("a refused token exchange is a 502 naming the reason", async () => {
    const other = await makeServiceAccount(up.url + "/token");
    await expect(
      run(vertexAdaptor, call({ key: JSON.stringify(other.json) }), {
        model: "x",
        messages: [{ role: "user", content: "x" }],
      }),
    ).rejects.toMatchObject({ status: 502, message: "Vertex AI token exchange failed: Invalid JWT Signature." });
  });

  test("Claude on Vertex: rawPredict URL, bearer token, body without model and with vertex anthropic_version", async () => {
    const o = await run(vertexAdaptor, call(), { model: "x", messages: [{ role: "user", content: "Hi" }] });
    expect(o.status).toBe(200);
    const rec = up.last();
    expect(rec.path).toBe(
      "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict",
    );
    expect(rec.headers.authorization).toMatch(/^Bearer ya29\.test-/);
    expect(rec.body.anthropic_version).toBe("vertex-2023-10-16");
    expect(o.body.choices[0].message.content).toBe("Hello from Claude.");
    expect(o.usage).toMatchObject({ prompt_tokens: 17, cached_tokens: 3 });
  });

  test("Claude on Vertex, streamed", async () => {
    const o = await run(vertexAdaptor, call({ stream: true }), {
      model: "x",
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(up.last().path).toEndWith(":streamRawPredict");
    expect(up.last().body.stream).toBe(true);
    expect(contentOf(o)).toBe("Hello from Claude.");
  });

  test("Gemini on Vertex: publisher google, roles filled in for native bodies, stream", async () => {
    const o = await run(
      vertexAdaptor,
      call({
        upstreamModel: "gemini-2.5-flash",
        requestModel: "gemini-2.5-flash",
        stream: true,
        clientWantsUsage: true,
      }),
      {
        model: "x",
        stream: true,
        messages: [{ role: "user", content: "Hi" }],
      },
    );
    expect(up.last().path).toBe(
      "/v1/projects/test-project/locations/us-east5/publishers/google/models/gemini-2.5-flash:streamGenerateContent",
    );
    expect(contentOf(o)).toBe("Hello from Gemini.");
    expect(chunksOf(o).at(-1).usage.prompt_tokens).toBe(9);
    const native = await run(vertexAdaptor, call({ format: "gemini", upstreamModel: "gemini-2.5-flash" }), {
      contents: [{ parts: [{ text: "Hi" }] }],
    });
    expect(up.last().body.contents[0].role).toBe("user");
    expect(native.body.candidates[0].content.parts[0].text).toBe("Hello from Gemini.");
  });

  test("the native format follows the model", () => {
    expect(vertexAdaptor.nativeFormat!(call())).toBe("claude");
    expect(vertexAdaptor.nativeFormat!(call({ upstreamModel: "gemini-2.5-pro" }))).toBe("gemini");
  });
});
