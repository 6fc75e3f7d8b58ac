import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  azureAdaptor,
  azureApiVersion,
  azureUrl,
  deploymentName,
  AZURE_DEFAULT_API_VERSION,
} from "../../server/relay/providers/azure/index.ts";
import { startAzureUpstream, AZURE_TEXT } from "../mocks/azure-upstream.ts";
import type { MockUpstream } from "../mocks/recorder.ts";
import { channel, contentOf, makeCall, run } from "./harness.ts";

describe("Azure URLs and names", () => {
  test("deployment names drop dots and the old snapshot suffixes", () => {
    expect(deploymentName("gpt-3.5-turbo")).toBe("gpt-35-turbo");
    expect(deploymentName("gpt-3.5-turbo-0613")).toBe("gpt-35-turbo");
    expect(deploymentName("gpt-4-0314")).toBe("gpt-4");
    expect(deploymentName("gpt-4o")).toBe("gpt-4o");
    expect(deploymentName("gpt-4.1-mini")).toBe("gpt-41-mini");
  });

  test("API version from the channel's other field, a JSON other, or the default", () => {
    expect(azureApiVersion({ channel: channel({ other: "2024-06-01" }), options: {} })).toBe("2024-06-01");
    expect(azureApiVersion({ channel: channel({ other: '{"api_version":"2025-01-01-preview"}' }), options: {} })).toBe(
      "2025-01-01-preview",
    );
    expect(azureApiVersion({ channel: channel({ other: "" }), options: {} })).toBe(AZURE_DEFAULT_API_VERSION);
  });

  test("per-mode URLs; a base URL ending in /openai is not doubled", () => {
    const c = (mode: any, baseUrl = "https://res.openai.azure.com") =>
      makeCall({ baseUrl, key: "k", mode, upstreamModel: "gpt-4o", channel: channel({ other: "2024-06-01" }) });
    expect(azureUrl(c("chat"))).toBe(
      "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01",
    );
    expect(azureUrl(c("embeddings", "https://res.openai.azure.com/openai"))).toBe(
      "https://res.openai.azure.com/openai/deployments/gpt-4o/embeddings?api-version=2024-06-01",
    );
    expect(azureUrl(c("images"))).toContain("/openai/deployments/gpt-4o/images/generations?");
    expect(azureUrl(c("responses"))).toBe("https://res.openai.azure.com/openai/responses?api-version=2024-06-01");
  });
});

describe("Azure adaptor against the mock upstream", () => {
  let up: MockUpstream;
  beforeAll(() => (up = startAzureUpstream()));
  afterAll(() => up.stop());
  const call = (p: Partial<Parameters<typeof makeCall>[0]> = {}) =>
    makeCall({
      baseUrl: up.url,
      key: "azure-key",
      upstreamModel: "gpt-3.5-turbo",
      requestModel: "gpt-3.5-turbo",
      channel: channel({ type: 3, other: "2024-06-01" }),
      ...p,
    });

  test("chat goes to the deployment with api-key and api-version, no Authorization header", async () => {
    const o = await run(azureAdaptor, call(), { model: "gpt-3.5-turbo", messages: [{ role: "user", content: "Hi" }] });
    expect(o.status).toBe(200);
    const rec = up.last();
    expect(rec.path).toBe("/openai/deployments/gpt-35-turbo/chat/completions");
    expect(rec.search).toBe("?api-version=2024-06-01");
    expect(rec.headers["api-key"]).toBe("azure-key");
    expect(rec.headers.authorization).toBeUndefined();
    expect(o.body.choices[0].message.content).toBe(AZURE_TEXT);
    expect(o.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 4 });
  });

  test("stream passes through and reports usage", async () => {
    const o = await run(azureAdaptor, call({ stream: true, upstreamModel: "gpt-4o" }), {
      model: "gpt-4o",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Hi" }],
    });
    expect(contentOf(o)).toBe(AZURE_TEXT);
    expect(o.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 4 });
  });

  test("embeddings", async () => {
    const o = await run(azureAdaptor, call({ mode: "embeddings", upstreamModel: "text-embedding-3-small" }), {
      model: "text-embedding-3-small",
      input: "x",
    });
    expect(up.last().path).toBe("/openai/deployments/text-embedding-3-small/embeddings");
    expect(o.body.data[0].embedding).toEqual([0.5, 0.25]);
  });

  test("wrong key and missing deployment come back as readable errors", async () => {
    const bad = await run(azureAdaptor, call({ key: "nope" }), {
      model: "x",
      messages: [{ role: "user", content: "x" }],
    });
    expect(bad.status).toBe(401);
    expect(bad.error).toContain("invalid subscription key");
    const missing = await run(azureAdaptor, call({ upstreamModel: "gpt-5" }), {
      model: "x",
      messages: [{ role: "user", content: "x" }],
    });
    expect(missing.status).toBe(404);
    expect(missing.error).toContain("deployment");
  });
});
