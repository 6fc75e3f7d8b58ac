// Channel list and form (spec 001 §2 Channel page, §4 channel status/form, §5 channel submit and batch rules, §9 colours).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { cleanup, fireEvent, screen, waitFor, within } from "@testing-library/react";
import { ADMIN, USER, mockFetch, ok, renderApp, resetDom, sleep, type FetchMock } from "./helpers.tsx";
import { responseTimeColor } from "../../console/pages/_shared/colors.ts";
import { emptyChannel, toBody, validateChannel } from "../../console/pages/channel-edit/ChannelForm.tsx";
import { DEFAULT_CHANNEL_MODELS } from "../../server/catalogue/models.ts";
import { runTiming } from "../../console/pages/channel/runs.tsx";

let fm: FetchMock;
// Unmount explicitly (with several test files in one run, the library's own cleanup is registered only once),
// and clear the toasts, so no test's message is left in the document for the next one.
afterEach(() => {
  resetDom();
  fm?.restore();
});

const CH = (over: Record<string, unknown>) => ({
  id: 1,
  name: "main",
  type: 1,
  status: 1,
  group: "default",
  models: "gpt-4o-mini,gpt-4o",
  tag: "",
  priority: 0,
  weight: 0,
  response_time: 0,
  balance: 0,
  used_quota: 0,
  other_info: "",
  ...over,
});
const LIST = [
  CH({}),
  CH({ id: 2, name: "slow", response_time: 4200 }),
  CH({
    id: 3,
    name: "broken",
    status: 3,
    other_info: JSON.stringify({ status_reason: "invalid api key", status_time: 1_700_000_000 }),
  }),
];

function routes(extra: Record<string, unknown> = {}) {
  return {
    "GET /api/channel/": ok({ items: LIST, total: 3, page: 1, page_size: 10 }),
    "GET /api/group/": ok(["default", "vip"]),
    "GET /api/channel/models_enabled": ok(["gpt-4o-mini", "claude-3-5-haiku-20241022"]),
    ...extra,
  };
}

const t = (k: string) => k;

describe("channel rules", () => {
  test("response time colours: untested grey, ≤1 s green, ≤3 s lime, ≤5 s yellow, above red", () => {
    expect(responseTimeColor(0)).toBe("grey");
    expect(responseTimeColor(1000)).toBe("green");
    expect(responseTimeColor(1001)).toBe("lime");
    expect(responseTimeColor(3000)).toBe("lime");
    expect(responseTimeColor(5000)).toBe("gold");
    expect(responseTimeColor(5001)).toBe("red");
  });

  test("validation: name and key on create, one model, JSON mapping, integer priority, non-negative weight", () => {
    const v = { ...emptyChannel(), models: ["gpt-4o"] };
    expect(validateChannel(v, true, t)).toBe("ops.ch.nameKeyRequired");
    expect(validateChannel({ ...v, name: "a", key: "k", models: [] }, true, t)).toBe("ops.ch.modelRequired");
    expect(validateChannel({ ...v, name: "a", key: "k", model_mapping: "{nope" }, true, t)).toBe("ops.ch.mappingJson");
    expect(validateChannel({ ...v, name: "a", key: "k", priority: "1.5" }, true, t)).toBe("ops.ch.priorityInt");
    expect(validateChannel({ ...v, name: "a", key: "k", weight: "-1" }, true, t)).toBe("ops.ch.weightInt");
    // Editing may leave the key empty (the stored key is kept).
    expect(validateChannel({ ...v, name: "a" }, false, t)).toBeNull();
  });

  test("the body: trailing slash stripped, lists as comma strings, type 18 defaults to v2.1, batch mode", () => {
    const body = toBody({
      ...emptyChannel(),
      type: 18,
      name: " n ",
      key: "a\nb",
      base_url: "https://x.test///",
      models: ["m1", "m2"],
      groups: ["default", "vip"],
      batch: true,
    });
    expect(body).toMatchObject({
      type: 18,
      name: "n",
      base_url: "https://x.test",
      other: "v2.1",
      models: "m1,m2",
      group: "default,vip",
      mode: "batch",
      key: "a\nb",
    });
    const edit = toBody({ ...emptyChannel(), name: "n", models: ["m"] }, 7);
    expect(edit.id).toBe(7);
    expect("key" in edit).toBe(false);
    expect("mode" in edit).toBe(false);
  });
});

describe("channel page", () => {
  test("a normal user gets the not-found page and no channel call is made", async () => {
    fm = mockFetch(routes());
    await renderApp("/channel", { user: USER });
    expect(await screen.findByText("The page does not exist, please check the address")).toBeTruthy();
    expect(fm.calls.some((c) => c.path.startsWith("/api/channel"))).toBe(false);
  });

  test("lists channels with coloured response times and the auto-disable reason", async () => {
    fm = mockFetch(routes());
    await renderApp("/channel", { user: ADMIN });
    const slow = (await screen.findByText("slow")).closest("tr")!;
    const tag = within(slow).getByTestId("response-time");
    expect(tag.textContent).toBe("4.20 s");
    expect(tag.className).toContain("gold");
    expect(within(screen.getByText("main").closest("tr")!).getByTestId("response-time").textContent).toBe("Not tested");
    const broken = screen.getByText("broken").closest("tr")!;
    fireEvent.mouseEnter(within(broken).getByText("Auto-disabled"));
    expect((await screen.findByTestId("status-reason")).textContent).toContain("invalid api key");
  });

  test("with no channel yet the list says so and offers the form; a search that finds nothing does not", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/": ok({ items: [], total: 0 }),
        "GET /api/channel/search": ok({ items: [], total: 0 }),
      }),
    );
    await renderApp("/channel", { user: ADMIN });
    fireEvent.click(await screen.findByTestId("add-first-channel"));
    expect(await screen.findByText("Create channel")).toBeTruthy();
    expect(screen.getByText("No channels yet: add one to start serving requests")).toBeTruthy();
    fireEvent.change(screen.getByPlaceholderText("ID, name, base URL, tag"), {
      target: { value: "nothing-like-this" },
    });
    fireEvent.click(screen.getByText("Search"));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/channel/search")).toBe(true));
    await waitFor(() => expect(screen.queryByTestId("add-first-channel")).toBeNull());
  });

  test("the id-sort toggle is remembered under id-sort and sent as id_sort", async () => {
    fm = mockFetch(routes());
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    fireEvent.click(screen.getByTestId("id-sort"));
    await waitFor(() =>
      expect(fm.calls.some((c) => c.path === "/api/channel/" && c.query.get("id_sort") === "true")).toBe(true),
    );
    expect(localStorage.getItem("id-sort")).toBe("true");
  });

  test("tag mode shows tag rows whose enable-all posts the tag", async () => {
    const tagRow = {
      is_tag: true,
      tag: "team-a",
      name: "team-a",
      type: 1,
      channel_count: 2,
      status: 2,
      group: "default",
      models: "m",
      priority: 0,
      weight: 0,
      used_quota: 0,
      balance: 0,
      response_time: 0,
      children: [CH({ id: 5, name: "a1", tag: "team-a" }), CH({ id: 6, name: "a2", tag: "team-a" })],
    };
    fm = mockFetch(
      routes({
        "GET /api/channel/": (c: any) =>
          ok(c.query.get("tag_mode") === "true" ? { items: [tagRow], total: 1 } : { items: LIST, total: 3 }),
        "POST /api/channel/tag/enabled": ok(),
      }),
    );
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    fireEvent.click(screen.getByTestId("tag-mode"));
    const row = (await screen.findByText("team-a")).closest("tr")!;
    expect(localStorage.getItem("tag-mode")).toBe("true");
    fireEvent.click(within(row).getByText("Enable all"));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/channel/tag/enabled")).toBe(true));
    expect(fm.calls.find((c) => c.path === "/api/channel/tag/enabled")!.body).toEqual({ tag: "team-a" });
  });

  test("batch tag: nothing selected, then an empty tag, are refused; a tag is sent with the ids", async () => {
    fm = mockFetch(routes({ "POST /api/channel/batch/tag": ok(2) }));
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    const batchTag = async () => {
      fireEvent.click(screen.getByTestId("batch-menu"));
      fireEvent.click((await screen.findAllByText("Set tag for selected")).at(-1)!);
    };
    await batchTag();
    expect(await screen.findByText("select channels to tag first")).toBeTruthy();
    for (const name of ["main", "slow"])
      fireEvent.click(screen.getByText(name).closest("tr")!.querySelector("input[type=checkbox]")!);
    await batchTag();
    const input = await screen.findByTestId("batch-tag-input");
    const okButton = () => within(input.closest(".arco-modal")! as HTMLElement).getByRole("button", { name: "OK" });
    fireEvent.click(okButton());
    expect(await screen.findByText("tag cannot be empty")).toBeTruthy();
    fireEvent.change(input, { target: { value: "team-b" } });
    fireEvent.click(okButton());
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/channel/batch/tag")).toBe(true));
    expect(fm.calls.find((c) => c.path === "/api/channel/batch/tag")!.body).toEqual({ ids: [1, 2], tag: "team-b" });
  });

  test("batch delete with nothing selected says so and sends nothing", async () => {
    fm = mockFetch(routes());
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    fireEvent.click(screen.getByTestId("batch-menu"));
    fireEvent.click(await screen.findByText("Delete selected"));
    const modal = (await screen.findByText("Delete the selected channels?")).closest(".arco-modal") as HTMLElement;
    fireEvent.click(within(modal).getAllByRole("button").at(-1)!);
    expect(await screen.findByText("select channels to delete first")).toBeTruthy();
    expect(fm.calls.some((c) => c.path === "/api/channel/batch")).toBe(false);
  });

  test("test runs the channel test and shows the new response time", async () => {
    fm = mockFetch(routes({ "GET /api/channel/test/1": { success: true, message: "", time: 0.42 } }));
    await renderApp("/channel", { user: ADMIN });
    const row = (await screen.findByText("main")).closest("tr")!;
    fireEvent.click(within(row).getByText("Test"));
    await waitFor(() => expect(within(row).getByTestId("response-time").textContent).toBe("0.42 s"));
    expect(within(row).getByTestId("response-time").className).toContain("green");
    expect(await screen.findByText("Channel main tested OK in 0.42 s")).toBeTruthy();
  });

  test("update balance refreshes the row's balance", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/update_balance/1/": { success: true, message: "", balance: 12.5, data: { balance: 12.5 } },
      }),
    );
    await renderApp("/channel", { user: ADMIN });
    const row = (await screen.findByText("main")).closest("tr")!;
    fireEvent.click(within(row).getByTestId("row-more"));
    fireEvent.click(await screen.findByText("Balance"));
    await waitFor(() => expect(within(row).getByTestId("balance").textContent).toBe("$12.50"));
  });

  test("hiding a column is remembered under channels-table-columns", async () => {
    fm = mockFetch(routes());
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    fireEvent.click(screen.getByText("Columns"));
    const modal = (await screen.findByText("Select all")).closest(".arco-modal") as HTMLElement;
    fireEvent.click(within(modal).getByText("Weight").closest("label")!.querySelector("input")!);
    fireEvent.click(within(modal).getByRole("button", { name: "OK" }));
    await waitFor(() => expect(JSON.parse(localStorage.getItem("channels-table-columns") ?? "{}").weight).toBe(false));
    await waitFor(() => expect(screen.queryAllByText("Weight").filter((e) => e.closest("th")).length).toBe(0));
  });
});

describe("channel form", () => {
  async function openForm() {
    await renderApp("/channel/add", { user: ADMIN });
    return screen.findByTestId("channel-form");
  }

  test("starts with the type's default models; a new type fills its defaults only when the list is empty", async () => {
    fm = mockFetch(routes());
    await openForm();
    await waitFor(() => expect(screen.getAllByText("gpt-4o-mini").length).toBeGreaterThan(0));
    fireEvent.click(screen.getByText("Clear"));
    // Pick type 14 (Anthropic Claude) through the select.
    fireEvent.click(screen.getByTestId("channel-type").querySelector(".arco-select-view")!);
    fireEvent.click(await screen.findByText("14 · Anthropic Claude"));
    await waitFor(() => expect(screen.getAllByText(DEFAULT_CHANNEL_MODELS[14][0]).length).toBeGreaterThan(0));
  });

  test("a list still holding the old type's untouched defaults follows the new type; an edited list is kept", async () => {
    fm = mockFetch(routes());
    await openForm();
    await waitFor(() => expect(screen.getAllByText("gpt-4o-mini").length).toBeGreaterThan(0));
    const pick = async (label: string) => {
      fireEvent.click(screen.getByTestId("channel-type").querySelector(".arco-select-view")!);
      fireEvent.click(await screen.findByText(label));
    };
    await pick("14 · Anthropic Claude");
    await waitFor(() => expect(screen.getAllByText(DEFAULT_CHANNEL_MODELS[14][0]).length).toBeGreaterThan(0));
    await waitFor(() =>
      expect(screen.queryAllByText("gpt-4o-mini").filter((e) => e.closest(".arco-tag")).length).toBe(0),
    );
    // Once the user adds a model of their own, a type change leaves the list alone.
    fireEvent.change(screen.getByPlaceholderText("Custom model names, comma separated"), {
      target: { value: "my-model" },
    });
    fireEvent.click(screen.getByText("Add"));
    await screen.findByText("my-model");
    await pick("24 · Google Gemini");
    await sleep(50);
    expect(screen.getAllByText("my-model").length).toBeGreaterThan(0);
    expect(screen.getAllByText(DEFAULT_CHANNEL_MODELS[14][0]).length).toBeGreaterThan(0);
  });

  test("submitting without name and key shows the message, marks both fields and sends nothing", async () => {
    fm = mockFetch(routes());
    await openForm();
    fireEvent.click(screen.getByTestId("channel-submit"));
    expect((await screen.findByTestId("form-error")).textContent).toContain("please fill in channel name and key");
    expect(fm.calls.some((c) => c.method === "POST" && c.path === "/api/channel/")).toBe(false);
    // The fields themselves are marked, the reason under the first; typing in one takes its mark away.
    const marked = () =>
      [...document.querySelectorAll("[data-invalid=true]")].map((el) =>
        el.querySelector("[data-testid]")?.getAttribute("data-testid"),
      );
    expect(marked()).toEqual(["channel-name", "channel-key"]);
    expect(
      screen.getByTestId("channel-name").closest("[data-invalid]")!.querySelector("[role=alert]")!.textContent,
    ).toBe("please fill in channel name and key");
    fireEvent.change(screen.getByTestId("channel-name"), { target: { value: "n" } });
    await waitFor(() => expect(marked()).toEqual(["channel-key"]));
  });

  test("an invalid model mapping marks the mapping field", async () => {
    fm = mockFetch(routes());
    await openForm();
    await waitFor(() => expect(screen.getAllByText("gpt-4o-mini").length).toBeGreaterThan(0));
    fireEvent.change(screen.getByTestId("channel-name"), { target: { value: "up" } });
    fireEvent.change(screen.getByTestId("channel-key"), { target: { value: "sk-1" } });
    fireEvent.change(screen.getByPlaceholderText('{"gpt-3.5-turbo": "gpt-4o-mini"}'), { target: { value: "{nope" } });
    fireEvent.click(screen.getByTestId("channel-submit"));
    const field = (await screen.findByText("model mapping must be valid JSON", { selector: "[role=alert]" })).closest(
      "[data-invalid]",
    )!;
    expect(field.textContent).toContain("Model mapping (JSON)");
    expect(fm.calls.some((c) => c.method === "POST" && c.path === "/api/channel/")).toBe(false);
  });

  test("fetching models while creating needs the key", async () => {
    fm = mockFetch(routes());
    await openForm();
    fireEvent.click(screen.getByText("Fetch from upstream"));
    expect(await screen.findByText("fill in key")).toBeTruthy();
    fireEvent.change(screen.getByTestId("channel-key"), { target: { value: "sk-up" } });
    fm.on("POST /api/channel/fetch_models", ok(["up-model-1"]));
    fireEvent.click(screen.getByText("Fetch from upstream"));
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/channel/fetch_models")).toBe(true));
    expect(fm.calls.find((c) => c.path === "/api/channel/fetch_models")!.body).toEqual({
      base_url: "",
      type: 1,
      key: "sk-up",
    });
    expect((await screen.findAllByText("up-model-1")).length).toBeGreaterThan(0);
  });

  test("custom model names that already exist are reported", async () => {
    fm = mockFetch(routes());
    await openForm();
    await waitFor(() => expect(screen.getAllByText("gpt-4o-mini").length).toBeGreaterThan(0));
    fireEvent.change(screen.getByPlaceholderText("Custom model names, comma separated"), {
      target: { value: "gpt-4o-mini, my-model" },
    });
    fireEvent.click(screen.getByText("Add"));
    expect(await screen.findByText(/some models already exist: gpt-4o-mini/)).toBeTruthy();
    expect(screen.getAllByText("my-model").length).toBeGreaterThan(0);
  });

  test("a valid create posts the channel and returns to the list", async () => {
    fm = mockFetch(routes({ "POST /api/channel/": ok(undefined, "channel created") }));
    await openForm();
    await waitFor(() => expect(screen.getAllByText("gpt-4o-mini").length).toBeGreaterThan(0));
    fireEvent.change(screen.getByTestId("channel-name"), { target: { value: "up" } });
    fireEvent.change(screen.getByTestId("channel-key"), { target: { value: "sk-1" } });
    fireEvent.change(screen.getByTestId("channel-base-url"), { target: { value: "http://127.0.0.1:9/" } });
    fireEvent.click(screen.getByTestId("channel-submit"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "POST" && c.path === "/api/channel/")).toBe(true));
    const body = fm.calls.find((c) => c.method === "POST" && c.path === "/api/channel/")!.body;
    expect(body).toMatchObject({
      type: 1,
      name: "up",
      key: "sk-1",
      base_url: "http://127.0.0.1:9",
      group: "default",
      auto_ban: 1,
      priority: 0,
      weight: 0,
      mode: "single",
    });
    expect(body.models.split(",")).toEqual([...DEFAULT_CHANNEL_MODELS[1]]);
    await waitFor(() => expect(document.querySelector('[data-testid="location"]')!.textContent).toBe("/channel"));
  });

  test("editing loads the channel and puts it back with its id", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/4": ok({
          ...CH({ id: 4, name: "edit-me", models: "a,b", model_mapping: '{"x":"y"}' }),
          key: "",
        }),
        "PUT /api/channel/": ok(),
      }),
    );
    await renderApp("/channel/edit/4", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("edit-me"));
    fireEvent.click(screen.getByTestId("channel-submit"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    const body = fm.calls.find((c) => c.method === "PUT")!.body;
    expect(body).toMatchObject({ id: 4, name: "edit-me", models: "a,b", model_mapping: '{"x":"y"}' });
    expect("key" in body).toBe(false);
  });
});

describe("channel page bulk actions", () => {
  const listCalls = () => fm.calls.filter((c) => c.method === "GET" && c.path === "/api/channel/").length;
  const openMenu = async (testId: string, item: string) => {
    fireEvent.click(screen.getByTestId(testId));
    fireEvent.click(await screen.findByText(item));
  };
  const confirmDialog = async (title: string) => {
    const modal = (await screen.findByText(title)).closest(".arco-modal") as HTMLElement;
    fireEvent.click(within(modal).getAllByRole("button").at(-1)!);
  };

  test("fix calls its endpoint, reports the count and reloads the list", async () => {
    fm = mockFetch(routes({ "POST /api/channel/fix": ok(3) }));
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    const before = listCalls();
    await openMenu("more-menu", "Fix abilities");
    expect(await screen.findByText("Fixed 3 channel(s)")).toBeTruthy();
    await waitFor(() => expect(listCalls()).toBe(before + 1));
  });

  test("delete disabled asks first, then sends DELETE /api/channel/disabled and reports the count", async () => {
    fm = mockFetch(routes({ "DELETE /api/channel/disabled": ok(2) }));
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    await openMenu("more-menu", "Delete disabled channels");
    await screen.findByText("Delete every manually or automatically disabled channel?");
    expect(fm.calls.some((c) => c.path === "/api/channel/disabled")).toBe(false);
    await confirmDialog("Delete every manually or automatically disabled channel?");
    expect(await screen.findByText("Deleted 2 channel(s)")).toBeTruthy();
    expect(fm.calls.filter((c) => c.path === "/api/channel/disabled").map((c) => c.method)).toEqual(["DELETE"]);
  });

  test("a bulk action the server refuses shows the server message", async () => {
    fm = mockFetch(routes({ "POST /api/channel/fix": { success: false, message: "fix is already running" } }));
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    await openMenu("more-menu", "Fix abilities");
    expect(await screen.findByText("fix is already running")).toBeTruthy();
  });

  test("a list that cannot be loaded says 'refresh failed' with the reason", async () => {
    fm = mockFetch(routes({ "GET /api/channel/": { success: false, message: "database is locked" } }));
    await renderApp("/channel", { user: ADMIN });
    // Under a loaded CI machine the page and its toast once took longer than the 4 s default (the toast was not
    // there yet): wait for the list request first, then give the toast the time a busy machine needs.
    await waitFor(() => expect(fm.calls.some((c) => c.method === "GET" && c.path === "/api/channel/")).toBe(true), {
      timeout: 10_000,
    });
    expect(await screen.findByText("refresh failed: database is locked", {}, { timeout: 10_000 })).toBeTruthy();
  });
});

describe("test all and update all balances: live progress", () => {
  // biome-ignore lint/correctness/noComponentHookFactories: T builds a test-result row, not a component.
  const T = (over: Record<string, unknown>) => ({
    name: "",
    success: true,
    message: "",
    time: 0.42,
    response_time: 420,
    test_time: 1_800_000_000,
    status: 1,
    ...over,
  });
  const listCalls = () => fm.calls.filter((c) => c.method === "GET" && c.path === "/api/channel/").length;
  /** The table row of a channel (its name also appears in the banner's failure list). */
  const rowOf = (name: string) => document.querySelector(`.sy-clip[title="${name}"]`)!.closest("tr")!;
  let saved = 0;
  beforeEach(() => {
    saved = runTiming.pollMs;
    runTiming.pollMs = 200;
  });
  afterEach(() => {
    runTiming.pollMs = saved;
  });

  test("test all shows done / total while it runs, writes each result into its row, lists the failures, then reloads", async () => {
    const batches = [
      { running: true, total: 2, done: 1, succeeded: 1, failed: 0, results: [T({ id: 1, name: "main" })] },
      {
        running: false,
        total: 2,
        done: 2,
        succeeded: 1,
        failed: 1,
        results: [
          T({
            id: 3,
            name: "broken",
            success: false,
            message: "invalid api key provided",
            response_time: 0,
            status: 1,
          }),
        ],
      },
    ];
    const since: Array<string | null> = [];
    // The server's list: what each finished test wrote.
    let list = LIST;
    // Polls before the test has seen the run start find it as it started: the batches wait for the test, not
    // for how fast the page polls.
    let seenStart = false;
    const started = { running: true, total: 2, done: 0, succeeded: 0, failed: 0, results: [] };
    fm = mockFetch(
      routes({
        "GET /api/channel/": () => ok({ items: list, total: list.length }),
        "GET /api/channel/test/progress": (c: any) => {
          if (c.query.get("since") !== null && !seenStart) return ok(started);
          since.push(c.query.get("since"));
          // The first read (on opening the page) finds no run; then the batches, one per poll.
          if (c.query.get("since") === null) return ok(null);
          const next = batches.shift() ?? null;
          if (next && !next.running) {
            list = LIST.map((x) =>
              x.id === 1
                ? { ...x, response_time: 420, test_time: 1_800_000_000 }
                : x.id === 3
                  ? {
                      ...x,
                      response_time: 0,
                      test_time: 1_800_000_000,
                      other_info: JSON.stringify({ test_error: "invalid api key provided" }),
                    }
                  : x,
            );
          }
          return ok(next);
        },
        "GET /api/channel/test": ok(started, "testing all channels started in the background"),
      }),
    );
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    const before = listCalls();
    fireEvent.click(screen.getByTestId("test-all"));
    expect((await screen.findByTestId("run-test-summary")).textContent).toBe("Testing channels: 0 / 2 done, 0 failed");
    seenStart = true;
    await waitFor(() => expect(within(rowOf("main")).getByTestId("response-time").textContent).toBe("0.42 s"));
    await waitFor(() =>
      expect(screen.getByTestId("run-test-summary").textContent).toBe("Tested 2 channel(s): 1 passed, 1 failed"),
    );
    expect(since).toEqual([null, "0", "1"]);
    expect(screen.getByTestId("run-test").getAttribute("data-running")).toBe("false");
    expect(screen.getByTestId("run-test-failures").textContent).toContain("broken");
    expect(screen.getByTestId("run-test-failures").textContent).toContain("invalid api key provided");
    // The failed channel reads "Failed" (not "Not tested"), the reason in its tooltip.
    const broken = rowOf("broken");
    const tag = within(broken).getByTestId("response-time");
    expect(tag.textContent).toBe("Failed");
    expect(tag.className).toContain("red");
    await waitFor(() => expect(listCalls()).toBe(before + 1));
  });

  test("a run going on when the page opens is followed too", async () => {
    let polls = 0;
    // Until the test has seen the run in progress, polls find it unchanged (not a race with the page's timer).
    let seenRunning = false;
    const running = {
      running: true,
      total: 3,
      done: 1,
      succeeded: 1,
      failed: 0,
      results: [T({ id: 2, name: "slow", response_time: 900 })],
    };
    fm = mockFetch(
      routes({
        "GET /api/channel/": ok({ items: LIST.map((x) => (x.id === 2 ? { ...x, response_time: 900 } : x)), total: 3 }),
        "GET /api/channel/test/progress": (c: any) => {
          if (c.query.get("since") === null) return ok(running);
          if (!seenRunning) return ok({ ...running, results: [] });
          polls++;
          return ok({ running: false, total: 3, done: 3, succeeded: 3, failed: 0, results: [] });
        },
      }),
    );
    await renderApp("/channel", { user: ADMIN });
    expect((await screen.findByTestId("run-test-summary")).textContent).toBe("Testing channels: 1 / 3 done, 0 failed");
    seenRunning = true;
    await waitFor(() =>
      expect(screen.getByTestId("run-test-summary").textContent).toBe("Tested 3 channel(s): 3 passed, 0 failed"),
    );
    expect(polls).toBe(1);
    expect(within(rowOf("slow")).getByTestId("response-time").textContent).toBe("0.90 s");
  });

  test("a failed test stays visible after a reload: 'Failed' with its reason and time", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/": ok({
          items: [
            CH({
              id: 9,
              name: "keyless",
              response_time: 0,
              test_time: 1_800_000_000,
              other_info: JSON.stringify({ test_error: "no answer within 60 seconds" }),
            }),
          ],
          total: 1,
        }),
      }),
    );
    await renderApp("/channel", { user: ADMIN });
    const tag = within((await screen.findByText("keyless")).closest("tr")!).getByTestId("response-time");
    expect(tag.textContent).toBe("Failed");
    fireEvent.mouseEnter(tag);
    expect((await screen.findByTestId("test-reason")).textContent).toContain("no answer within 60 seconds");
  });

  test("update all balances writes each balance into its row and names the ones that failed", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/update_balance/progress": (c: any) =>
          ok(
            c.query.get("since") === null
              ? null
              : {
                  running: false,
                  total: 3,
                  done: 3,
                  updated: 1,
                  failed: 1,
                  skipped: 1,
                  results: [
                    { id: 1, name: "main", success: true, balance: 12.5, balance_updated_time: 1_800_000_000 },
                    { id: 2, name: "slow", success: false, message: "the balance endpoint answered 401" },
                    { id: 3, name: "broken", success: false, skipped: true },
                  ],
                },
          ),
        "GET /api/channel/update_balance": ok({
          running: true,
          total: 3,
          done: 0,
          updated: 0,
          failed: 0,
          skipped: 0,
          results: [],
        }),
      }),
    );
    await renderApp("/channel", { user: ADMIN });
    await screen.findByText("main");
    fireEvent.click(screen.getByTestId("update-all-balances"));
    await waitFor(() =>
      expect(screen.getByTestId("run-balance-summary").textContent).toBe(
        "Balances of 3 channel(s): 1 updated, 1 failed, 1 without a balance",
      ),
    );
    expect(within(rowOf("main")).getByTestId("balance").textContent).toBe("$12.50");
    expect(within(rowOf("slow")).getByTestId("balance").textContent).toContain("⚠");
    const failures = screen.getByTestId("run-balance-failures").textContent!;
    expect(failures).toContain("slow");
    expect(failures).not.toContain("broken");
  });
});

describe("tag editor", () => {
  const tagRow = {
    is_tag: true,
    tag: "team-a",
    name: "team-a",
    type: 1,
    channel_count: 2,
    status: 1,
    group: "default",
    models: "m1,m2",
    priority: 0,
    weight: 0,
    used_quota: 0,
    balance: 0,
    response_time: 0,
    children: [CH({ id: 5, name: "a1", tag: "team-a" }), CH({ id: 6, name: "a2", tag: "team-a" })],
  };

  async function openEditor() {
    fm = mockFetch(routes({ "GET /api/channel/": ok({ items: [tagRow], total: 1 }), "PUT /api/channel/tag": ok() }));
    await renderApp("/channel", { user: ADMIN, storage: { "tag-mode": "true" } });
    const row = (await screen.findByText("team-a")).closest("tr")!;
    fireEvent.click(within(row).getByTestId("row-more"));
    fireEvent.click(await screen.findByText("Edit tag"));
    const modal = (await screen.findByText("Edit tag: team-a")).closest(".arco-modal") as HTMLElement;
    const [priority, weight] = within(modal).getAllByPlaceholderText("unchanged");
    return {
      modal,
      priority,
      weight,
      mapping: within(modal).getByPlaceholderText("Leave empty to keep each channel's model mapping"),
      ok: () => fireEvent.click(within(modal).getByRole("button", { name: "OK" })),
      error: () => within(modal).queryByTestId("form-error")?.textContent ?? "",
    };
  }
  const tagPuts = () => fm.calls.filter((c) => c.method === "PUT" && c.path === "/api/channel/tag");

  test("submitting with nothing changed says 'no changes' and sends nothing", async () => {
    const ed = await openEditor();
    ed.ok();
    await waitFor(() => expect(ed.error()).toBe("no changes"));
    expect(tagPuts()).toEqual([]);
  });

  test("priority must be an integer, weight a non-negative integer, the mapping JSON; then only the changes are sent", async () => {
    const ed = await openEditor();
    fireEvent.change(ed.priority, { target: { value: "1.5" } });
    ed.ok();
    await waitFor(() => expect(ed.error()).toBe("priority must be an integer"));
    fireEvent.change(ed.priority, { target: { value: "-2" } });
    fireEvent.change(ed.weight, { target: { value: "-1" } });
    ed.ok();
    await waitFor(() => expect(ed.error()).toBe("weight must be a non-negative integer"));
    fireEvent.change(ed.weight, { target: { value: "0" } });
    fireEvent.change(ed.mapping, { target: { value: "{not json" } });
    ed.ok();
    await waitFor(() => expect(ed.error()).toBe("model mapping must be valid JSON"));
    expect(tagPuts()).toEqual([]);
    fireEvent.change(ed.mapping, { target: { value: "" } });
    ed.ok();
    await waitFor(() => expect(tagPuts().length).toBe(1));
    expect(tagPuts()[0].body).toEqual({ tag: "team-a", priority: -2, weight: 0 });
  });
});

describe("channel form: base URL ending in /v1", () => {
  async function fillAndSubmit(base: string) {
    await renderApp("/channel/add", { user: ADMIN });
    await screen.findByTestId("channel-form");
    await waitFor(() => expect(screen.getAllByText("gpt-4o-mini").length).toBeGreaterThan(0));
    fireEvent.change(screen.getByTestId("channel-name"), { target: { value: "up" } });
    fireEvent.change(screen.getByTestId("channel-key"), { target: { value: "sk-1" } });
    fireEvent.change(screen.getByTestId("channel-base-url"), { target: { value: base } });
    fireEvent.click(screen.getByTestId("channel-submit"));
  }
  const posts = () => fm.calls.filter((c) => c.method === "POST" && c.path === "/api/channel/");
  // A closed confirm may stay in the DOM (no transition end in happy-dom): the newest one is the last.
  const confirmDialog = async (count = 1) => {
    await waitFor(() => expect(screen.getAllByText("Base URL ends in /v1").length).toBe(count));
    return screen.getAllByText("Base URL ends in /v1").at(-1)!.closest(".arco-modal") as HTMLElement;
  };

  test("asks for confirmation; cancelling sends nothing, confirming saves", async () => {
    fm = mockFetch(routes({ "POST /api/channel/": ok() }));
    await fillAndSubmit("https://api.example.test/v1/");
    let dialog = await confirmDialog();
    expect(within(dialog).getByText(/usually doubles it/)).toBeTruthy();
    expect(posts()).toEqual([]);
    fireEvent.click(
      within(dialog)
        .getAllByRole("button")
        .find((b) => !b.className.includes("primary") && b.textContent)!,
    );
    await sleep(100);
    expect(posts()).toEqual([]);
    fireEvent.click(screen.getByTestId("channel-submit"));
    dialog = await confirmDialog(2);
    fireEvent.click(dialog.querySelector(".arco-btn-primary")!);
    await waitFor(() => expect(posts().length).toBe(1));
    expect(posts()[0].body.base_url).toBe("https://api.example.test/v1");
  });

  test("a base URL without /v1 saves without asking", async () => {
    fm = mockFetch(routes({ "POST /api/channel/": ok() }));
    await fillAndSubmit("https://api.example.test");
    // The confirm would block the save, so a post means no question was asked.
    await waitFor(() => expect(posts().length).toBe(1));
  });
});

describe("channel form: default models from GET /api/models", () => {
  test("the server's map is used and cached under `models`; 'fill defaults' uses it", async () => {
    const served = { "1": ["srv-gpt-a", "srv-gpt-b"], "14": ["srv-claude"] };
    fm = mockFetch(routes({ "GET /api/models": ok(served) }));
    await renderApp("/channel/add", { user: ADMIN });
    await screen.findByTestId("channel-form");
    expect((await screen.findAllByText("srv-gpt-a")).length).toBeGreaterThan(0);
    // The catalogue defaults shown before the answer are replaced (their tags leave after Arco's exit transition).
    const tags = () =>
      [...document.querySelectorAll("[data-testid=channel-models] .arco-tag")].map((e) => e.textContent);
    await waitFor(() => expect(tags()).toEqual(["srv-gpt-a", "srv-gpt-b"]));
    expect(JSON.parse(localStorage.getItem("models")!)).toEqual(served);
    fireEvent.click(screen.getByText("Clear"));
    fireEvent.click(screen.getByTestId("channel-type").querySelector(".arco-select-view")!);
    fireEvent.click(await screen.findByText("14 · Anthropic Claude"));
    expect((await screen.findAllByText("srv-claude")).length).toBeGreaterThan(0);
    fireEvent.click(screen.getByText("Clear"));
    await waitFor(() => expect(screen.queryAllByText("srv-claude").length).toBe(0));
    fireEvent.click(screen.getByText("Fill defaults for this type"));
    expect((await screen.findAllByText("srv-claude")).length).toBeGreaterThan(0);
  });

  test("when the call fails, the cached map answers, and without a cache the catalogue", async () => {
    fm = mockFetch(routes({ "GET /api/models": { success: false, message: "forbidden" } }));
    await renderApp("/channel/add", { user: ADMIN, storage: { models: JSON.stringify({ "1": ["cached-model"] }) } });
    expect((await screen.findAllByText("cached-model")).length).toBeGreaterThan(0);
    await waitFor(() => expect(fm.calls.some((c) => c.path === "/api/models")).toBe(true));
    expect(JSON.parse(localStorage.getItem("models")!)).toEqual({ "1": ["cached-model"] });
    cleanup();
    await renderApp("/channel/add", { user: ADMIN });
    await waitFor(() => expect(screen.getAllByText(DEFAULT_CHANNEL_MODELS[1][0]).length).toBeGreaterThan(0));
  });
});
