// Playground, pricing and chat pages (spec 001 §2 Playground/Pricing, §3 chat message and settings, §4 message states,
// §5 playground rules, §8 chat messages, §9 price display).
import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, fireEvent, screen, waitFor, within } from "@testing-library/react";
import { USER, mockFetch, ok, renderApp, location, resetDom, withClipboard, type FetchMock } from "./helpers.tsx";
import { buildPayload, PLAYGROUND_DEFAULTS } from "../../console/pages/playground/index.tsx";
import { consumeSse } from "../../console/pages/playground/stream.ts";
import { matchesModel, priceText, sortPricing } from "../../console/pages/pricing/index.tsx";
import { buildChatLink, chatLinks } from "../../console/pages/_shared/chat.ts";

let fm: FetchMock;
// Unmount explicitly: with several test files in one run, the library's own cleanup is registered only once.
afterEach(() => {
  cleanup();
  fm?.restore();
});

const enc = new TextEncoder();
const frame = (content: string) =>
  enc.encode(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`);

/** A streamed answer whose chunks the test releases one by one. */
function controlledStream() {
  let ctrl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start: (c) => {
      ctrl = c;
    },
  });
  return {
    response: new Response(body, { headers: { "content-type": "text/event-stream" } }),
    push: (text: string) => ctrl.enqueue(frame(text)),
    done: () => {
      ctrl.enqueue(enc.encode("data: [DONE]\n\n"));
      ctrl.close();
    },
  };
}

const lists = {
  "GET /api/user/models": ok(["gpt-4o-mini", "gpt-4o"]),
  "GET /api/user/self/groups": ok({ default: { desc: "Default", ratio: 1 }, vip: { desc: "VIP", ratio: 2 } }),
};

describe("playground rules", () => {
  test("the system message is sent only when the prompt is non-empty; max tokens is an integer", () => {
    const history = [{ id: "1", role: "user" as const, content: "hi", createAt: 0, status: "complete" as const }];
    const withSystem = buildPayload({
      model: "m",
      group: "g",
      maxTokens: 12.7,
      temperature: 0.3,
      systemPrompt: "be brief",
      history,
    });
    expect(withSystem).toEqual({
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hi" },
      ],
      stream: true,
      model: "m",
      group: "g",
      max_tokens: 12,
      temperature: 0.3,
    });
    expect(
      buildPayload({ model: "m", group: "", maxTokens: 0, temperature: 0, systemPrompt: "  ", history }).messages,
    ).toEqual([{ role: "user", content: "hi" }]);
    expect(PLAYGROUND_DEFAULTS.model).toBe("gpt-4o-mini");
  });

  test("temperature, top_p and max_tokens are sent only when the user set them (max tokens 0 means no limit)", () => {
    const history = [{ id: "1", role: "user" as const, content: "hi", createAt: 0, status: "complete" as const }];
    const untouched = buildPayload({
      model: "m",
      group: "",
      maxTokens: PLAYGROUND_DEFAULTS.maxTokens,
      temperature: PLAYGROUND_DEFAULTS.temperature,
      systemPrompt: "",
      history,
    });
    expect(Object.keys(untouched).sort()).toEqual(["group", "messages", "model", "stream"]);
    expect(
      buildPayload({ model: "m", group: "", maxTokens: 64, temperature: 0.7, topP: 0.9, systemPrompt: "", history }),
    ).toMatchObject({ max_tokens: 64, temperature: 0.7, top_p: 0.9 });
  });

  test("SSE parsing keeps a partial line for the next read and stops at [DONE]", () => {
    const got: string[] = [];
    let done = false;
    const h = {
      onDelta: (d: string) => got.push(d),
      onDone: () => {
        done = true;
      },
      onError: () => {},
    };
    const first = consumeSse('data: {"choices":[{"delta":{"content":"Hel"}}]}\n\ndata: {"choices":[{"del', h);
    expect(got).toEqual(["Hel"]);
    consumeSse(first.rest + 'ta":{"content":"lo"}}]}\n\ndata: [DONE]\n\n', h);
    expect(got).toEqual(["Hel", "lo"]);
    expect(done).toBe(true);
  });
});

describe("playground page", () => {
  test("the answer renders as it arrives: loading → incomplete → complete; the request carries the user header", async () => {
    const s = controlledStream();
    fm = mockFetch({ ...lists, "POST /pg/chat/completions": () => s.response });
    await renderApp("/playground", { user: USER });
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/user/models")).toBe(true));
    fireEvent.change(screen.getByTestId("pg-input"), { target: { value: "Hello?" } });
    fireEvent.click(screen.getByTestId("pg-send"));
    const answer = await screen.findByTestId("msg-assistant");
    expect(answer.getAttribute("data-status")).toBe("loading");
    s.push("Hi");
    await waitFor(() => expect(answer.getAttribute("data-status")).toBe("incomplete"));
    expect(answer.textContent).toContain("Hi");
    s.push(" there");
    await waitFor(() => expect(answer.textContent).toContain("Hi there"));
    s.done();
    await waitFor(() => expect(answer.getAttribute("data-status")).toBe("complete"));
    const call = fm.calls.find((c) => c.path === "/pg/chat/completions")!;
    expect(call.headers["new-api-user"]).toBe(String(USER.id));
    expect(call.body).toMatchObject({ stream: true, model: "gpt-4o-mini" });
    expect("max_tokens" in call.body || "temperature" in call.body).toBe(false);
    expect(call.body.messages).toEqual([
      { role: "system", content: PLAYGROUND_DEFAULTS.systemPrompt },
      { role: "user", content: "Hello?" },
    ]);
  });

  test("an upstream error marks the message as error with the server's message", async () => {
    fm = mockFetch({
      ...lists,
      "POST /pg/chat/completions": () =>
        new Response(JSON.stringify({ error: { message: "no available channels for model gpt-4o-mini" } }), {
          status: 503,
        }),
    });
    await renderApp("/playground", { user: USER });
    fireEvent.change(await screen.findByTestId("pg-input"), { target: { value: "x" } });
    fireEvent.click(screen.getByTestId("pg-send"));
    const answer = await screen.findByTestId("msg-assistant");
    await waitFor(() => expect(answer.getAttribute("data-status")).toBe("error"));
    expect(answer.textContent).toContain("no available channels for model gpt-4o-mini");
  });

  test("a reply renders as Markdown (table, highlighted code with a copy button); raw HTML in it stays text", async () => {
    const s = controlledStream();
    fm = mockFetch({ ...lists, "POST /pg/chat/completions": () => s.response });
    await renderApp("/playground", { user: USER });
    fireEvent.change(await screen.findByTestId("pg-input"), { target: { value: "x" } });
    fireEvent.click(screen.getByTestId("pg-send"));
    s.push(
      "Here is **bold** <img src=x onerror=alert(1)>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint('hi')\n```\n",
    );
    s.done();
    const answer = await screen.findByTestId("msg-assistant");
    await waitFor(() => expect(answer.getAttribute("data-status")).toBe("complete"));
    const md = within(answer).getByTestId("msg-markdown");
    expect(md.querySelector("strong")!.textContent).toBe("bold");
    expect(md.querySelector("img")).toBeNull();
    expect(md.textContent).toContain("<img src=x onerror=alert(1)>");
    expect(md.querySelectorAll("table td").length).toBe(2);
    expect(md.querySelector("code.language-python .hljs-built_in")!.textContent).toBe("print");
    await withClipboard(() => fireEvent.click(within(md).getByText("Copy")), "print('hi')\n");
  });

  test("while a reply streams, Stop replaces Send and ends the reply with what arrived", async () => {
    const s = controlledStream();
    fm = mockFetch({ ...lists, "POST /pg/chat/completions": (c: any) => s.response });
    await renderApp("/playground", { user: USER });
    fireEvent.change(await screen.findByTestId("pg-input"), { target: { value: "long story" } });
    fireEvent.click(screen.getByTestId("pg-send"));
    s.push("Once upon");
    const answer = await screen.findByTestId("msg-assistant");
    await waitFor(() => expect(answer.getAttribute("data-status")).toBe("incomplete"));
    expect(screen.queryByTestId("pg-send")).toBeNull();
    fireEvent.click(screen.getByTestId("pg-stop"));
    await waitFor(() => expect(answer.getAttribute("data-status")).toBe("complete"));
    expect(answer.textContent).toContain("Once upon");
    expect(screen.getByTestId("pg-send")).toBeTruthy();
  });

  test("clear context removes the conversation", async () => {
    const s = controlledStream();
    fm = mockFetch({ ...lists, "POST /pg/chat/completions": () => s.response });
    await renderApp("/playground", { user: USER });
    fireEvent.change(await screen.findByTestId("pg-input"), { target: { value: "x" } });
    fireEvent.click(screen.getByTestId("pg-send"));
    s.push("a");
    s.done();
    await waitFor(() => expect(screen.getByTestId("msg-assistant").getAttribute("data-status")).toBe("complete"));
    fireEvent.click(screen.getByTestId("pg-clear"));
    expect(screen.queryByTestId("msg-user")).toBeNull();
    expect(screen.queryByTestId("msg-assistant")).toBeNull();
  });

  test("on a mobile width the settings panel toggles", async () => {
    const width = globalThis.innerWidth;
    (globalThis as any).innerWidth = 400;
    try {
      fm = mockFetch(lists);
      await renderApp("/playground", { user: USER });
      expect(await screen.findByTestId("pg-settings")).toBeTruthy();
      expect(screen.queryByTestId("pg-panel")).toBeNull();
      fireEvent.click(screen.getByTestId("pg-settings"));
      expect(await screen.findByTestId("pg-panel")).toBeTruthy();
    } finally {
      (globalThis as any).innerWidth = width;
    }
  });
});

describe("pricing", () => {
  const E = (name: string, over: Record<string, unknown> = {}) => ({
    model_name: name,
    quota_type: 0,
    model_ratio: 1,
    completion_ratio: 2,
    enable_groups: ["default"],
    model_price: 0,
    ...over,
  });

  test("default sort: available first, per-token before per-request, gpt names first", () => {
    const list = [
      E("claude", {}),
      E("gpt-x", { quota_type: 1 }),
      E("vip-only", { enable_groups: ["vip"] }),
      E("gpt-4o"),
      E("abc"),
    ];
    expect(sortPricing(list, "default").map((e) => e.model_name)).toEqual([
      "gpt-4o",
      "abc",
      "claude",
      "gpt-x",
      "vip-only",
    ]);
    expect(matchesModel("GPT-4o-mini", "4O-M")).toBe(true);
  });

  test("prices: prompt = ratio × 2 × group ratio per 1M; completion × completion ratio; fixed × group ratio", () => {
    expect(priceText(E("m", { model_ratio: 0.075, completion_ratio: 4 }), 2)).toEqual({
      prompt: "$0.3",
      completion: "$1.2",
    });
    expect(priceText(E("m", { quota_type: 1, model_price: 0.05 }), 2)).toEqual({ fixed: "$0.1" });
  });

  test("a guest sees the default-group warning; search filters; clicking a group switches the viewed group", async () => {
    fm = mockFetch({
      "GET /api/pricing": {
        success: true,
        message: "",
        data: [E("gpt-4o"), E("vip-model", { enable_groups: ["vip"] })],
        group_ratio: { default: 1, vip: 2 },
        usable_group: { default: "Default", vip: "VIP" },
      },
    });
    await renderApp("/pricing");
    expect(await screen.findByTestId("guest-warning")).toBeTruthy();
    const vipRow = (await screen.findByText("vip-model")).closest("tr")!;
    expect(within(vipRow).queryByTestId("available")).toBeNull();
    expect(screen.getByText("Copy selected models").closest("button")!.disabled).toBe(true);
    fireEvent.click(within(vipRow).getByText("vip"));
    await waitFor(() =>
      expect(within(screen.getByText("vip-model").closest("tr")!).queryByTestId("available")).toBeTruthy(),
    );
    expect(screen.getByText(/Viewing group vip/)).toBeTruthy();
    fireEvent.change(screen.getByTestId("pricing-search"), { target: { value: "GPT" } });
    await waitFor(() => expect(screen.queryByText("vip-model")).toBeNull());
    expect(screen.getByText("gpt-4o")).toBeTruthy();
  });

  test("a logged-in user sees the group banner with the group ratio", async () => {
    fm = mockFetch({
      "GET /api/pricing": {
        success: true,
        message: "",
        data: [E("gpt-4o")],
        group_ratio: { default: 1.5 },
        usable_group: { default: "Default" },
      },
    });
    await renderApp("/pricing", { user: USER });
    expect(await screen.findByText("Your group is default, with ratio 1.5.")).toBeTruthy();
    expect(screen.queryByTestId("guest-warning")).toBeNull();
  });
});

describe("chat pages", () => {
  test("links: {key} gets the sk- key, {address} the encoded server address", () => {
    expect(chatLinks([{ A: "https://a.test/?k={key}" }, { B: "" }, "junk"])).toEqual([
      { name: "A", url: "https://a.test/?k={key}" },
    ]);
    expect(buildChatLink("https://a.test/?k={key}&u={address}", "abc", "http://gw.test:3000")).toBe(
      "https://a.test/?k=sk-abc&u=http%3A%2F%2Fgw.test%3A3000",
    );
  });

  test("/chat/0 embeds the first chat link with the first enabled token", async () => {
    fm = mockFetch({
      "GET /api/token/": ok({
        items: [
          { key: "sk-off", status: 2 },
          { key: "sk-on", status: 1 },
        ],
        total: 2,
      }),
    });
    await renderApp("/chat/0", {
      user: USER,
      status: { server_address: "https://gw.test", chats: [{ Next: "https://chat.test/#/?key={key}&url={address}" }] },
    });
    const frame = await screen.findByTestId("chat-frame");
    expect(frame.getAttribute("src")).toBe("https://chat.test/#/?key=sk-on&url=https%3A%2F%2Fgw.test");
    expect(fm.calls[0].query.get("size")).toBe("100");
  });

  test("a guest is sent to the login page (not told their login expired) and no token call is made", async () => {
    for (const path of ["/chat/0", "/chat2link"]) {
      fm = mockFetch({
        "GET /api/token/": () =>
          new Response(JSON.stringify({ success: false, message: "not logged in or login expired" }), { status: 401 }),
      });
      await renderApp(path, { status: { chats: [{ Next: "https://chat.test/?key={key}" }] } });
      await waitFor(() => expect(location()).toBe("/login"));
      expect(fm.calls.filter((c) => c.path === "/api/token/").length).toBe(0);
      fm.restore();
      resetDom();
    }
  });

  test("without chat links the page asks to contact the administrator", async () => {
    fm = mockFetch({});
    await renderApp("/chat/0", { user: USER, status: { chats: [] } });
    expect(await screen.findByText("contact the administrator to configure chat links")).toBeTruthy();
  });

  test("an index without a link is a configuration error", async () => {
    fm = mockFetch({});
    await renderApp("/chat2link?id=5", { user: USER, status: { chats: [{ Next: "https://chat.test/?key={key}" }] } });
    expect(await screen.findByText("chat link configuration error, contact the administrator")).toBeTruthy();
    expect(fm.calls.length).toBe(0);
  });

  test("with no enabled token the user is told and sent to /token after 1.5 s", async () => {
    fm = mockFetch({ "GET /api/token/": ok({ items: [{ key: "sk-off", status: 2 }], total: 1 }) });
    await renderApp("/chat/0", { user: USER, status: { chats: [{ Next: "https://chat.test/?key={key}" }] } });
    expect(
      (await screen.findAllByText("You have no enabled token: create or enable one first")).length,
    ).toBeGreaterThan(0);
    await waitFor(() => expect(location()).toBe("/token"), { timeout: 3000 });
  });
});
