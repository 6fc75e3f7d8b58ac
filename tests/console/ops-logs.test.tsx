// Usage logs, dashboard, drawing and task logs (spec 001 §2, §4 task states, §6 admin extras, §9 colours and paging).
import { afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { ADMIN, USER, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";
import { firstTokenColor, taskDuration, elapsedColor } from "../../console/pages/_shared/colors.ts";
import { toSeries } from "../../console/pages/detail/index.tsx";
import { axisTicks } from "../../console/pages/detail/StackedBars.tsx";
import { prefetchFirstLogPage } from "../../console/pages/log/prefetch.ts";

let fm: FetchMock;
/** The input of a labelled filter field. */
const field = (label: string) =>
  within(screen.getByTestId("filters")).getByText(label).closest(".sy-field")!.querySelector("input")!;
// Unmount explicitly (with several test files in one run, the library's own cleanup is registered only once),
// and clear the toasts, so no test's message is left in the document for the next one.
afterEach(() => {
  resetDom();
  fm?.restore();
});

const LOG = (over: Record<string, unknown>) => ({
  id: 1,
  created_at: 1_700_000_000,
  type: 2,
  channel: 3,
  channel_name: "main",
  username: "alice",
  user_id: 2,
  token_name: "laptop",
  group: "default",
  model_name: "gpt-4o-mini",
  use_time: 2,
  is_stream: true,
  prompt_tokens: 12,
  completion_tokens: 5,
  quota: 40,
  content: "",
  other: JSON.stringify({
    frt: 1500,
    model_ratio: 0.075,
    completion_ratio: 4,
    group_ratio: 1,
    admin_info: { use_channel: [4, 3] },
  }),
  ...over,
});

describe("colour rules", () => {
  test("use time: under 101 s green, under 300 s orange, else red; first token: under 3 s green, under 10 s orange", () => {
    expect([elapsedColor(100), elapsedColor(101), elapsedColor(299), elapsedColor(300)]).toEqual([
      "green",
      "orange",
      "orange",
      "red",
    ]);
    expect([firstTokenColor(2.9), firstTokenColor(3), firstTokenColor(9.9), firstTokenColor(10)]).toEqual([
      "green",
      "orange",
      "orange",
      "red",
    ]);
  });

  test("task duration: N/A without both times, red over 60 s", () => {
    expect(taskDuration(0, 5, "s").text).toBe("N/A");
    expect(taskDuration(100, 160, "s")).toEqual({ text: "60.0 s", color: "green" });
    expect(taskDuration(1000, 62_000, "ms")).toEqual({ text: "61.0 s", color: "red" });
  });
});

describe("usage log page", () => {
  test("a user reads the self endpoints; no admin columns or filters", async () => {
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [LOG({ channel: 0, other: JSON.stringify({ frt: 1500 }) })], total: 1 }),
      "GET /api/log/self/stat": ok({ quota: 40, rpm: 1, tpm: 17 }),
    });
    await renderApp("/log", { user: USER });
    const row = (await screen.findAllByText("gpt-4o-mini"))[0].closest("tr")!;
    expect(within(row).getByTestId("use-time").className).toContain("green");
    expect(within(row).getByTestId("frt").textContent).toBe("1.5 s");
    expect(within(screen.getByTestId("filters")).queryByText("Username")).toBeNull();
    expect(within(screen.getByTestId("filters")).queryByText("Channel ID")).toBeNull();
    expect((await screen.findByTestId("log-stat")).textContent).toContain("TPM: 17");
    expect(fm.calls.some((c) => c.path === "/api/log/")).toBe(false);
    const list = fm.calls.find((c) => c.path === "/api/log/self/")!;
    expect(list.query.get("type")).toBe("0");
    expect(Number(list.query.get("end_timestamp"))).toBeGreaterThan(Date.now() / 1000);
  });

  test("opened first, the page shows the first page asked for while the console loaded, without asking again", async () => {
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [LOG({ model_name: "prefetched-model" })], total: 1 }),
      "GET /api/log/self/stat": ok({ quota: 40, rpm: 1, tpm: 17 }),
    });
    localStorage.setItem("user", JSON.stringify(USER));
    prefetchFirstLogPage();
    await waitFor(() => expect(fm.calls.filter((c) => c.path === "/api/log/self/").length).toBe(1));
    const sent = fm.calls.find((c) => c.path === "/api/log/self/")!;
    expect(sent.headers["new-api-user"]).toBe(String(USER.id));
    await renderApp("/log", { user: USER });
    expect(await screen.findByText("prefetched-model")).toBeTruthy();
    await screen.findByTestId("log-stat");
    expect(fm.calls.filter((c) => c.path === "/api/log/self/").length).toBe(1);
  });

  test("a minute that turns between the prefetch and the page's first render does not make it ask again", async () => {
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [LOG({ model_name: "prefetched-model" })], total: 1 }),
      "GET /api/log/self/stat": ok({ quota: 40, rpm: 1, tpm: 17 }),
    });
    localStorage.setItem("user", JSON.stringify(USER));
    const realNow = Date.now;
    const noon = new Date(2026, 10, 25, 12, 0, 59, 900).getTime();
    try {
      Date.now = () => noon;
      prefetchFirstLogPage();
      await waitFor(() => expect(fm.calls.filter((c) => c.path === "/api/log/self/").length).toBe(1));
      Date.now = () => noon + 300;
      await renderApp("/log", { user: USER });
      expect(await screen.findByText("prefetched-model")).toBeTruthy();
      await screen.findByTestId("log-stat");
    } finally {
      Date.now = realNow;
    }
    const asked = fm.calls.filter((c) => c.path === "/api/log/self/");
    expect(asked).toHaveLength(1);
    expect(fm.calls.find((c) => c.path === "/api/log/self/stat")!.query.get("end_timestamp")).toBe(
      asked[0].query.get("end_timestamp"),
    );
  });

  test("an admin filters by username and channel, sees retries and opens the user's info", async () => {
    fm = mockFetch({
      "GET /api/log/": ok({ items: [LOG({ use_time: 150 })], total: 1 }),
      "GET /api/log/stat": ok({ quota: 40, rpm: 1, tpm: 17 }),
      "GET /api/user/2": ok({ id: 2, username: "alice", quota: 1_000_000, used_quota: 250_000, request_count: 42 }),
    });
    await renderApp("/log", { user: ADMIN });
    const row = (await screen.findAllByText("gpt-4o-mini"))[0].closest("tr")!;
    expect(within(row).getByTestId("use-time").className).toContain("orange");
    expect(within(row).getByText("4 → 3")).toBeTruthy();
    fireEvent.change(field("Username"), { target: { value: "alice" } });
    fireEvent.change(field("Channel ID"), { target: { value: "3" } });
    fireEvent.click(screen.getByTestId("filter-search"));
    await waitFor(() => expect(fm.calls.filter((c) => c.path === "/api/log/").length).toBe(2));
    const q = fm.calls.filter((c) => c.path === "/api/log/")[1].query;
    expect([q.get("username"), q.get("channel")]).toEqual(["alice", "3"]);
    expect(fm.calls.filter((c) => c.path === "/api/log/stat")[1].query.get("username")).toBe("alice");
    fireEvent.click(within(row).getByText("alice"));
    expect(await screen.findByText("User information")).toBeTruthy();
    expect(screen.getByText("42")).toBeTruthy();
    expect(screen.getByText("$0.50")).toBeTruthy();
  });

  test("the time filter is Arco's range picker: a preset sets the range, Search sends it in seconds, Reset goes back to today", async () => {
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [], total: 0 }),
      "GET /api/log/self/stat": ok({ quota: 0, rpm: 0, tpm: 0 }),
    });
    await renderApp("/log", { user: USER });
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/log/self/")).toBe(true));
    // The picker arrives once the page is idle (a read-only box shows the range until then).
    const picker = await waitFor(() => {
      const el = screen.getByTestId("filters").querySelector(".arco-picker-range");
      if (!el) throw new Error("the picker has not arrived yet");
      return el;
    });
    fireEvent.click(picker.querySelector("input")!);
    fireEvent.click(await screen.findByText("Last 7 days"));
    fireEvent.click(screen.getByTestId("filter-search"));
    await waitFor(() => expect(fm.calls.filter((c) => c.path === "/api/log/self/").length).toBe(2));
    const sent = fm.calls.filter((c) => c.path === "/api/log/self/")[1].query;
    const weekAgo = new Date();
    weekAgo.setDate(weekAgo.getDate() - 7);
    weekAgo.setHours(0, 0, 0, 0);
    expect(Number(sent.get("start_timestamp"))).toBe(weekAgo.getTime() / 1000);
    expect(Number(sent.get("end_timestamp"))).toBeGreaterThan(Date.now() / 1000);
    fireEvent.click(screen.getByTestId("filter-reset"));
    await waitFor(() => expect(fm.calls.filter((c) => c.path === "/api/log/self/").length).toBe(3));
    const today = new Date();
    today.setHours(0, 0, 0, 0);
    expect(Number(fm.calls.filter((c) => c.path === "/api/log/self/")[2].query.get("start_timestamp"))).toBe(
      today.getTime() / 1000,
    );
  });

  test("details are worded in the reader's language from other: ratios and money with a decimal comma in Russian, a redeemed code in Chinese", async () => {
    const consume = LOG({
      other: JSON.stringify({
        frt: 1500,
        model_ratio: 0.075,
        completion_ratio: 4,
        group_ratio: 1.5,
        cache_tokens: 12000,
        cache_ratio: 0.1,
      }),
    });
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [consume], total: 1 }),
      "GET /api/log/self/stat": ok({ quota: 0, rpm: 0, tpm: 0 }),
    });
    const ru = await renderApp("/log", { user: USER, lang: "ru" });
    const details = await screen.findByTestId("details");
    expect(details.textContent).toBe("Коэффициент модели 0,075, завершения 4, группы 1,5; из кэша 12k токенов");
    expect(within(details.closest("tr")!).getByTestId("frt").textContent).toBe("1,5 с");
    expect(within(details.closest("tr")!).getByTestId("use-time").textContent).toBe("2 с");
    // Money uses the same decimal sign as the ratios beside it.
    expect(within(details.closest("tr")!).getByText("$0,000080")).toBeTruthy();
    ru.unmount();
    const redeemed = LOG({
      id: 2,
      type: 1,
      quota: 5_000_000,
      content: "redeemed a code: quota added $10.00, code id 7",
      other: JSON.stringify({ redemption_id: 7 }),
    });
    fm.on("GET /api/log/self/", ok({ items: [redeemed], total: 1 }));
    await renderApp("/log", { user: USER, lang: "zh" });
    expect((await screen.findByTestId("details")).textContent).toBe("兑换码 #7 兑换成功：增加额度 $10.00");
  });

  test("the request id filter is sent, and the expanded row shows both request ids", async () => {
    fm = mockFetch({
      "GET /api/log/self/": ok({
        items: [LOG({ request_id: "20260101000000abcd1234reqid001", upstream_request_id: "req_up_77" })],
        total: 1,
      }),
      "GET /api/log/self/stat": ok({ quota: 40, rpm: 1, tpm: 17 }),
    });
    await renderApp("/log", { user: USER });
    const row = (await screen.findAllByText("gpt-4o-mini"))[0].closest("tr")!;
    fireEvent.click(row.querySelector(".arco-table-expand-icon-cell button, .arco-table-expand-icon-cell span")!);
    expect(await screen.findByText("20260101000000abcd1234reqid001")).toBeTruthy();
    expect(screen.getByText("Upstream request ID")).toBeTruthy();
    expect(screen.getByText("req_up_77")).toBeTruthy();
    fireEvent.change(field("Request ID"), { target: { value: " 20260101000000abcd1234reqid001 " } });
    fireEvent.click(screen.getByTestId("filter-search"));
    await waitFor(() => expect(fm.calls.filter((c) => c.path === "/api/log/self/").length).toBe(2));
    expect(fm.calls.filter((c) => c.path === "/api/log/self/")[1].query.get("request_id")).toBe(
      "20260101000000abcd1234reqid001",
    );
  });

  test("the expanded row shows the pricing factors from other", async () => {
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [LOG({})], total: 1 }),
      "GET /api/log/self/stat": ok({ quota: 40, rpm: 1, tpm: 17 }),
    });
    await renderApp("/log", { user: USER });
    const row = (await screen.findAllByText("gpt-4o-mini"))[0].closest("tr")!;
    fireEvent.click(row.querySelector(".arco-table-expand-icon-cell button, .arco-table-expand-icon-cell span")!);
    expect(await screen.findByText("Model ratio")).toBeTruthy();
    expect(screen.getByText("0.075")).toBeTruthy();
    expect(screen.getByText("Completion ratio")).toBeTruthy();
  });

  test("reaching the last loaded page fetches the next server page", async () => {
    const page = (p: number) =>
      Array.from({ length: 10 }, (_, i) => LOG({ id: p * 100 + i, model_name: `m-${p}-${i}` }));
    fm = mockFetch({
      "GET /api/log/self/": (c: any) => ok({ items: page(Number(c.query.get("p"))), total: 25 }),
      "GET /api/log/self/stat": ok({ quota: 0, rpm: 0, tpm: 0 }),
    });
    await renderApp("/log", { user: USER });
    await screen.findByText("m-1-0");
    fireEvent.click(document.querySelector(".arco-pagination-item-next")!);
    await waitFor(() =>
      expect(fm.calls.filter((c) => c.path === "/api/log/self/").map((c) => c.query.get("p"))).toEqual(["1", "2"]),
    );
    expect(await screen.findByText("m-2-0")).toBeTruthy();
  });

  test("a top-up row shows the amount added as a credit and its text, not an empty row", async () => {
    const topup = LOG({
      id: 2,
      type: 1,
      channel: 0,
      token_name: "",
      group: "",
      model_name: "",
      use_time: 0,
      is_stream: false,
      prompt_tokens: 0,
      completion_tokens: 0,
      quota: 5_000_000,
      content: "redeemed a code: quota added $10.00, code id 7",
      other: "",
    });
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [topup, LOG({})], total: 2 }),
      "GET /api/log/self/stat": ok({ quota: 40, rpm: 1, tpm: 17 }),
    });
    await renderApp("/log", { user: USER });
    const credit = await screen.findByTestId("credit");
    expect(credit.textContent).toBe("+$10.00");
    const row = credit.closest("tr")!;
    expect(within(row).getByTestId("details").textContent).toBe("redeemed a code: quota added $10.00, code id 7");
    // A consumption row keeps the six-decimal cost and is not marked as a credit.
    const spent = (await screen.findAllByText("gpt-4o-mini"))[0].closest("tr")!;
    expect(within(spent).queryByTestId("credit")).toBeNull();
    expect(within(spent).getByText("$0.000080")).toBeTruthy();
  });

  test("the time cell puts the date over the time so the column stays narrow", async () => {
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [LOG({})], total: 1 }),
      "GET /api/log/self/stat": ok({ quota: 0, rpm: 0, tpm: 0 }),
    });
    await renderApp("/log", { user: USER });
    const row = (await screen.findAllByText("gpt-4o-mini"))[0].closest("tr")!;
    const d = new Date(1_700_000_000 * 1000);
    const p = (n: number) => String(n).padStart(2, "0");
    const cell = within(row).getByText(`${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`);
    expect(cell.parentElement!.textContent).toBe(
      `${cell.textContent}${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`,
    );
  });

  test("hiding a column is remembered under logs-table-columns", async () => {
    fm = mockFetch({
      "GET /api/log/self/": ok({ items: [LOG({})], total: 1 }),
      "GET /api/log/self/stat": ok({ quota: 0, rpm: 0, tpm: 0 }),
    });
    await renderApp("/log", { user: USER });
    await screen.findAllByText("gpt-4o-mini");
    fireEvent.click(screen.getByText("Columns"));
    const modal = (await screen.findByText("Select all")).closest(".arco-modal") as HTMLElement;
    fireEvent.click(within(modal).getByText("Cost").closest("label")!.querySelector("input")!);
    fireEvent.click(within(modal).getByRole("button", { name: "OK" }));
    await waitFor(() => expect(JSON.parse(localStorage.getItem("logs-table-columns") ?? "{}").cost).toBe(false));
  });
});

describe("dashboard", () => {
  test("rows become one series per model over sorted buckets; axis ticks are whole numbers", () => {
    const rows = [
      { model_name: "b", created_at: 7200, token_used: 5, count: 1, quota: 10 },
      { model_name: "a", created_at: 3600, token_used: 3, count: 2, quota: 4 },
      { model_name: "b", created_at: 3600, token_used: 1, count: 1, quota: 1 },
    ];
    const s = toSeries(rows, "hour", "count");
    expect(s.labels.length).toBe(2);
    expect(s.series).toEqual([
      { name: "a", values: [2, 0] },
      { name: "b", values: [1, 1] },
    ]);
    expect(axisTicks(1).ticks).toEqual([0, 1]);
    expect(axisTicks(17).ticks).toEqual([0, 5, 10, 15, 20]);
  });

  test("a user loads /api/data/self with the granularity; switching to day reloads", async () => {
    fm = mockFetch({
      "GET /api/data/self": ok([
        { model_name: "gpt-4o-mini", created_at: 1_700_000_000, token_used: 17, count: 1, quota: 40 },
      ]),
    });
    await renderApp("/detail", { user: USER, status: { data_export_default_time: "hour" } });
    expect(await screen.findByTestId("chart-quota")).toBeTruthy();
    await waitFor(() =>
      expect(screen.getByTestId("chart-calls").querySelectorAll(".recharts-bar-rectangle").length).toBe(1),
    );
    expect(fm.calls[0].query.get("granularity")).toBe("hour");
    expect(screen.queryByPlaceholderText("Username")).toBeNull();
    fireEvent.click(screen.getByText("Day"));
    await waitFor(() =>
      expect(
        fm.calls
          .filter((c) => c.path === "/api/data/self")
          .at(-1)!
          .query.get("granularity"),
      ).toBe("day"),
    );
    expect(fm.calls.some((c) => c.path === "/api/data/")).toBe(false);
  });

  test("the charts are drawn with recharts: one stacked segment per model and bucket, a legend, whole-number ticks", async () => {
    const rows = [
      { model_name: "gpt-4.1", created_at: 1_700_000_000, token_used: 10, count: 3, quota: 40 },
      { model_name: "gpt-4o-mini", created_at: 1_700_000_000, token_used: 5, count: 2, quota: 10 },
      { model_name: "gpt-4o-mini", created_at: 1_700_003_600, token_used: 7, count: 4, quota: 20 },
    ];
    fm = mockFetch({ "GET /api/data/self": ok(rows) });
    await renderApp("/detail", { user: USER, status: { data_export_default_time: "hour" } });
    const calls = await screen.findByTestId("chart-calls");
    expect(calls.querySelector("svg.recharts-surface")).toBeTruthy();
    // Three non-zero (model, bucket) cells → three bar segments; the dotted model name is read correctly.
    await waitFor(() => expect(calls.querySelectorAll(".recharts-bar-rectangle").length).toBe(3));
    expect([...calls.querySelectorAll(".recharts-legend-item-text")].map((e) => e.textContent)).toEqual([
      "gpt-4.1",
      "gpt-4o-mini",
    ]);
    // Stacked totals are 5 and 4 calls → ticks 0, 2, 4, 6.
    const ticks = [...calls.querySelectorAll(".recharts-yAxis-tick-labels .recharts-cartesian-axis-tick-value")].map(
      (e) => e.textContent,
    );
    expect(ticks).toEqual(["0", "2", "4", "6"]);
    for (const id of ["chart-quota", "chart-tokens"])
      expect(screen.getByTestId(id).querySelector(".recharts-surface")).toBeTruthy();
  });

  test("an admin uses the whole-site endpoint and may filter by username", async () => {
    fm = mockFetch({ "GET /api/data/": ok([]) });
    await renderApp("/detail", { user: ADMIN });
    expect(await screen.findByText("No usage in this period")).toBeTruthy();
    fireEvent.change(field("Username"), { target: { value: "alice" } });
    fireEvent.click(screen.getByTestId("filter-search"));
    await waitFor(() =>
      expect(
        fm.calls
          .filter((c) => c.path === "/api/data/")
          .at(-1)!
          .query.get("username"),
      ).toBe("alice"),
    );
  });
});

describe("drawing and task logs", () => {
  const DRAW = {
    id: 1,
    submit_time: 1_700_000_000_000,
    finish_time: 1_700_000_090_000,
    channel_id: 4,
    action: "IMAGINE",
    mj_id: "mj-123",
    code: 1,
    status: "SUCCESS",
    progress: "100%",
    image_url: "https://img.test/a.png",
    prompt: "a very long prompt about a cat sitting on a mat in the sun",
    prompt_en: "",
    fail_reason: "",
  };

  test("a user reads /api/mj/self from page 0 with millisecond times; no channel column or callback notice", async () => {
    fm = mockFetch({ "GET /api/mj/self": ok([DRAW]) });
    await renderApp("/midjourney", { user: USER });
    expect(await screen.findByText("Imagine")).toBeTruthy();
    const q = fm.calls[0].query;
    expect(q.get("p")).toBe("0");
    expect(Number(q.get("start_timestamp"))).toBeGreaterThan(1e12);
    expect(Number(q.get("end_timestamp")) - Number(q.get("start_timestamp"))).toBeGreaterThan(30 * 86400_000);
    expect(screen.getByTestId("duration").className).toContain("red");
    expect(screen.queryByTestId("mj-notice")).toBeNull();
    expect(screen.queryByPlaceholderText("Channel ID")).toBeNull();
    fireEvent.click(screen.getAllByTestId("long-text").find((e) => e.textContent!.startsWith("a very long"))!);
    expect((await screen.findByTestId("long-text-full")).textContent).toBe(DRAW.prompt);
  });

  test("an admin sees the drawing-callback notice and the channel filter", async () => {
    fm = mockFetch({ "GET /api/mj/": ok([DRAW]) });
    await renderApp("/midjourney", { user: ADMIN });
    expect(await screen.findByTestId("mj-notice")).toBeTruthy();
    expect(field("Channel ID")).toBeTruthy();
    expect(await screen.findByText("4")).toBeTruthy();
  });

  test("the callback notice is hidden when the drawing callback is enabled", async () => {
    fm = mockFetch({ "GET /api/mj/": ok([DRAW]) });
    await renderApp("/midjourney", { user: ADMIN, status: { mj_notify_enabled: true } });
    await screen.findByText("Imagine");
    expect(screen.queryByTestId("mj-notice")).toBeNull();
  });

  test("the task log starts at the start of today, shows statuses and the full JSON of a task", async () => {
    const task = {
      id: 9,
      submit_time: 1_700_000_000,
      finish_time: 1_700_000_030,
      progress: "100%",
      channel_id: 2,
      platform: "suno",
      action: "MUSIC",
      task_id: "task-xyz",
      status: "",
      fail_reason: "",
      data: { clips: 2 },
    };
    fm = mockFetch({ "GET /api/task/self": ok([task]) });
    await renderApp("/task", { user: USER });
    expect(await screen.findByText("Submitting")).toBeTruthy();
    expect(screen.getByText("Music")).toBeTruthy();
    const start = new Date();
    start.setHours(0, 0, 0, 0);
    expect(Number(fm.calls[0].query.get("start_timestamp"))).toBe(start.getTime() / 1000);
    expect(screen.getByTestId("duration").className).toContain("green");
    fireEvent.click(screen.getByText("task-xyz"));
    expect(JSON.parse((await screen.findByTestId("task-detail")).textContent!)).toMatchObject({
      task_id: "task-xyz",
      data: { clips: 2 },
    });
  });
});
