// The Details of a usage log are built in the browser from the log's `other` facts, in the reader's
// language; the server's English `content` is shown only when `other` has nothing to word.
import { afterAll, describe, expect, test } from "bun:test";
import { changeLanguage, t } from "../../console/i18n/index.ts";
import { logDetails } from "../../console/pages/log/details.ts";
import { LOG_TYPE } from "../../server/catalogue/index.ts";

const row = (type: number, other: Record<string, unknown> | null, content = "", quota = 0, is_stream = false) => ({
  type,
  other: other ? JSON.stringify(other) : "",
  content,
  quota,
  is_stream,
});
const keys = (entries: Array<{ key: string }>) => entries.map((e) => e.key);

afterAll(() => changeLanguage("en"));

describe("log details", () => {
  test("a per-token call: its ratios, cache, upstream model, interruption and path; the retries for admins only", async () => {
    await changeLanguage("en");
    const r = row(
      LOG_TYPE.consume,
      {
        model_ratio: 1.25,
        completion_ratio: 4,
        group_ratio: 1,
        model_price: -1,
        cache_tokens: 100,
        cache_ratio: 0.5,
        frt: 800,
        is_model_mapped: true,
        upstream_model_name: "gpt-4o-2024-08-06",
        stream_interrupted: true,
        request_path: "/v1/chat/completions",
        admin_info: { use_channel: ["2", "5"] },
      },
      "model ratio 1.25, completion ratio 4, group ratio 1",
      1234,
      true,
    );
    const user = logDetails(r, t);
    expect(user.summary).toBe(
      "Model ratio 1.25, completion ratio 4, group ratio 1; 100 cached tokens; upstream model gpt-4o-2024-08-06; stream cut off",
    );
    expect(keys(user.entries)).toEqual([
      "modelRatio",
      "completionRatio",
      "groupRatio",
      "cache",
      "upstream",
      "interrupted",
      "frt",
      "path",
    ]);
    expect(user.entries.find((e) => e.key === "cache")!.value).toBe("100 at ratio 0.5");
    expect(user.entries.find((e) => e.key === "frt")!.value).toBe("0.80 s");
    // The server's English text is not repeated when the facts were worded.
    expect(keys(user.entries)).not.toContain("content");
    expect(keys(logDetails(r, t, true).entries)).toContain("retry");
    expect(logDetails(r, t, true).entries.find((e) => e.key === "retry")!.value).toBe("2 → 5");
  });

  test("prompt caching: reads, and writes by TTL at their ratios, in each language", async () => {
    await changeLanguage("en");
    const other = {
      model_ratio: 1.5,
      completion_ratio: 5,
      group_ratio: 1,
      model_price: -1,
      cache_tokens: 3000,
      cache_ratio: 0.1,
      cache_creation_tokens: 3000,
      cache_creation_ratio: 1.25,
      cache_creation_tokens_5m: 1000,
      cache_creation_ratio_5m: 1.25,
      cache_creation_tokens_1h: 2000,
      cache_creation_ratio_1h: 2,
    };
    const d = logDetails(row(LOG_TYPE.consume, other, "", 8396), t);
    expect(d.entries.filter((e) => e.key.startsWith("cache")).map((e) => [e.label, e.value])).toEqual([
      ["Cache read tokens", "3000 at ratio 0.1"],
      ["Cache writes (5 min)", "1000 at ratio 1.25"],
      ["Cache writes (1 hour)", "2000 at ratio 2"],
    ]);
    expect(d.summary).toBe(
      "Model ratio 1.5, completion ratio 5, group ratio 1; 3000 cached tokens; 3000 tokens written to cache",
    );
    // Writes without a TTL split (older upstreams) are one entry at the creation ratio.
    const {
      cache_creation_tokens_5m: _a,
      cache_creation_ratio_5m: _b,
      cache_creation_tokens_1h: _c,
      cache_creation_ratio_1h: _d,
      ...unsplit
    } = other;
    expect(
      logDetails(row(LOG_TYPE.consume, unsplit, "", 1), t)
        .entries.filter((e) => e.key.startsWith("cache"))
        .map((e) => e.key),
    ).toEqual(["cache", "cacheCreation"]);
    await changeLanguage("zh");
    expect(
      logDetails(row(LOG_TYPE.consume, other), t)
        .entries.filter((e) => e.key.startsWith("cacheWrite"))
        .map((e) => e.label),
    ).toEqual(["缓存写入（5 分钟）", "缓存写入（1 小时）"]);
    await changeLanguage("ru");
    expect(logDetails(row(LOG_TYPE.consume, other), t).entries.find((e) => e.key === "cacheWrite1h")!.value).toBe(
      "2000 с коэффициентом 2",
    );
    await changeLanguage("en");
  });

  test("a call kept on its conversation's channel says so to admins", async () => {
    await changeLanguage("en");
    const other = {
      model_ratio: 1,
      completion_ratio: 1,
      group_ratio: 1,
      model_price: -1,
      admin_info: {
        use_channel: ["3"],
        channel_affinity: { rule_name: "prompt cache key", channel_id: 3, key_hint: "sess...1234" },
      },
    };
    expect(keys(logDetails(row(LOG_TYPE.consume, other, "", 5), t).entries)).not.toContain("affinity");
    expect(logDetails(row(LOG_TYPE.consume, other, "", 5), t, true).entries.find((e) => e.key === "affinity")).toEqual({
      key: "affinity",
      label: "Channel affinity",
      value: "kept on channel 3 by rule prompt cache key (conversation sess...1234)",
    });
    await changeLanguage("zh");
    expect(
      logDetails(row(LOG_TYPE.consume, other, "", 5), t, true).entries.find((e) => e.key === "affinity")!.label,
    ).toBe("渠道亲和");
    await changeLanguage("en");
  });

  test("the client's IP, when the log kept one (its user asked for it), is an entry; none when it is empty", async () => {
    await changeLanguage("en");
    const other = { model_ratio: 1, completion_ratio: 1, group_ratio: 1, model_price: -1 };
    const kept = logDetails({ ...row(LOG_TYPE.consume, other, "", 10), ip: "203.0.113.7" }, t);
    expect(kept.entries.find((e) => e.key === "ip")).toEqual({ key: "ip", label: "Client IP", value: "203.0.113.7" });
    expect(keys(logDetails({ ...row(LOG_TYPE.consume, other, "", 10), ip: "" }, t).entries)).not.toContain("ip");
    await changeLanguage("zh");
    expect(
      logDetails({ ...row(LOG_TYPE.error, {}, "upstream failure", 0), ip: "::1" }, t).entries.find(
        (e) => e.key === "ip",
      )!.label,
    ).toBe("客户端 IP");
    await changeLanguage("en");
  });

  test("a realtime response: its audio tokens at the audio ratios", async () => {
    await changeLanguage("en");
    const d = logDetails(
      row(
        LOG_TYPE.consume,
        {
          model_ratio: 2,
          completion_ratio: 4,
          group_ratio: 1,
          model_price: -1,
          realtime: true,
          audio_ratio: 8,
          audio_completion_ratio: 2,
          audio_input: 80,
          audio_output: 120,
        },
        "",
        2660,
        true,
      ),
      t,
    );
    expect(d.summary).toBe("Model ratio 2, completion ratio 4, group ratio 1; realtime response");
    expect(d.entries.filter((e) => e.key.startsWith("audio")).map((e) => [e.label, e.value])).toEqual([
      ["Audio input", "80 at ratio 8"],
      ["Audio output", "120 at ratio 16"],
    ]);
    await changeLanguage("ru");
    expect(
      logDetails(
        row(LOG_TYPE.consume, { model_ratio: 2, realtime: true, audio_input: 1, audio_output: 1 }),
        t,
      ).entries.map((e) => e.label),
    ).toContain("Аудио на выходе");
  });

  test("a per-call price, a paid top-up and a task refund, in Chinese and Russian", async () => {
    await changeLanguage("zh");
    expect(logDetails(row(LOG_TYPE.consume, { model_price: 0.02, group_ratio: 1, model_ratio: 0 }), t).summary).toBe(
      "按次计费 $0.02 × 分组倍率 1",
    );
    const paid = row(
      LOG_TYPE.topup,
      { money: 7.3, payment_method: "zfb", trade_no: "T1" },
      "online top-up: ...",
      500_000,
    );
    expect(logDetails(paid, t).summary).toBe("在线充值：增加额度 $1.00，支付 7.30（支付宝）");
    await changeLanguage("ru");
    const refund = row(
      LOG_TYPE.system,
      { task_id: "mj-9", action: "IMAGINE", refund: true, reason: "upstream failed" },
      "task mj-9 (IMAGINE) failed: 100 quota refunded",
      250_000,
    );
    const d = logDetails(refund, t);
    expect(d.summary).toBe("Задача mj-9 (IMAGINE) не выполнена: возвращено $0,50");
    expect(d.entries.find((e) => e.key === "reason")!.value).toBe("upstream failed");
  });

  test("without facts to word, the server's text: admin actions, old logs, and upstream errors (with their status)", async () => {
    await changeLanguage("ru");
    expect(logDetails(row(LOG_TYPE.manage, null, "admin changed the quota from $10.00 to $20.00"), t).summary).toBe(
      "admin changed the quota from $10.00 to $20.00",
    );
    expect(
      logDetails(row(LOG_TYPE.topup, null, "redeemed a code: quota added $10.00, code id 7", 5_000_000), t).summary,
    ).toBe("redeemed a code: quota added $10.00, code id 7");
    const err = logDetails(row(LOG_TYPE.error, { status_code: 429 }, "rate limit reached"), t);
    expect(err.summary).toBe("rate limit reached");
    expect(err.entries.map((e) => [e.label, e.value])).toEqual([
      ["HTTP-статус", "429"],
      ["Сообщение", "rate limit reached"],
    ]);
  });
});
