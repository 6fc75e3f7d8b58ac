// A mock upstream for channel tests: OpenAI-style chat/embeddings/models plus the balance endpoints of
// the providers Switchyard reads, failing or slowing down on demand.
export interface MockCall {
  method: string;
  path: string;
  auth: string | null;
  body: any;
}

export interface MockUpstream {
  url: string;
  calls: MockCall[];
  /** When set, every call answers this status and JSON body. */
  fail: { status: number; body: unknown } | null;
  delayMs: number;
  /** Keys (without "Bearer ") that get a 401 invalid_api_key answer. */
  badKeys: Set<string>;
  models: string[];
  stop(): void;
}

export function startMockUpstream(): MockUpstream {
  const state: Omit<MockUpstream, "url" | "stop"> = {
    calls: [],
    fail: null,
    delayMs: 0,
    badKeys: new Set(),
    models: ["gpt-4o", "gpt-4o-mini", "text-embedding-3-small"],
  };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      let body: any = null;
      const text = await req.text();
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
      state.calls.push({
        method: req.method,
        path: url.pathname + url.search,
        auth: req.headers.get("authorization"),
        body,
      });
      if (state.delayMs) await Bun.sleep(state.delayMs);
      if (state.fail) return Response.json(state.fail.body, { status: state.fail.status });
      const key = (req.headers.get("authorization") ?? "").replace(/^Bearer /, "");
      if (state.badKeys.has(key))
        return Response.json(
          { error: { message: "Incorrect API key provided", code: "invalid_api_key" } },
          { status: 401 },
        );
      const p = url.pathname;
      if (p.endsWith("/chat/completions")) {
        return Response.json({
          id: "chatcmpl-1",
          object: "chat.completion",
          created: 1,
          model: body?.model,
          choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        });
      }
      if (p.endsWith("/embeddings")) {
        return Response.json({
          object: "list",
          data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }],
          model: body?.model,
          usage: { prompt_tokens: 1, total_tokens: 1 },
        });
      }
      if (p.endsWith("/models"))
        return Response.json({
          object: "list",
          data: state.models.map((id) => ({ id, object: "model", owned_by: "mock" })),
        });
      // Balance endpoints, one per provider format.
      if (p === "/v1/dashboard/billing/subscription")
        return Response.json({ object: "billing_subscription", hard_limit_usd: 120, has_payment_method: true });
      if (p === "/v1/dashboard/billing/usage") return Response.json({ object: "list", total_usage: 2550 });
      if (p === "/v1/credits") return Response.json({ data: { total_credits: 50, total_usage: 12.25 } });
      if (p === "/user/balance") {
        return Response.json({
          is_available: true,
          balance_infos: [
            { currency: "CNY", total_balance: "110.00", granted_balance: "10.00", topped_up_balance: "100.00" },
            { currency: "USD", total_balance: "15.50", granted_balance: "0", topped_up_balance: "15.50" },
          ],
        });
      }
      if (p === "/v1/user/info")
        return Response.json({
          code: 20000,
          message: "OK",
          status: true,
          data: { id: "u1", balance: "0.88", chargeBalance: "88.00", totalBalance: "88.88" },
        });
      if (p === "/v1/users/me/balance")
        return Response.json({
          code: 0,
          data: { available_balance: 49.58894, voucher_balance: 46.58893, cash_balance: 3.00001 },
          scode: "0x0",
          status: true,
        });
      return Response.json({ error: { message: `no route ${p}` } }, { status: 404 });
    },
  });
  const mock = state as MockUpstream;
  mock.url = `http://127.0.0.1:${server.port}`;
  mock.stop = () => server.stop(true);
  return mock;
}
