// The channel form's per-type fields (from the catalogue row) and the channel settings (setting JSON):
// proxy, system prompt and its switches are edited with their own controls and saved into `setting`,
// keys the form does not know are kept, a bad proxy address is refused, required per-type fields are
// asked for, and a retired type says so.
import { afterEach, describe, expect, test } from "bun:test";
import { cleanup, fireEvent, screen, waitFor } from "@testing-library/react";
import { ADMIN, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";
import { emptyChannel, validateChannel } from "../../console/pages/channel-edit/ChannelForm.tsx";
import { TYPE_FIELDS, readSetting, writeSetting } from "../../console/pages/channel-edit/fields.ts";
import { CHANNEL_TYPES } from "../../server/catalogue/index.ts";

let fm: FetchMock;
afterEach(() => {
  resetDom();
  fm?.restore();
});

const routes = (extra: Record<string, unknown> = {}) => ({
  "GET /api/group/": ok(["default"]),
  "GET /api/channel/models_enabled": ok([]),
  "GET /api/channel/": ok({ items: [], total: 0, page: 1, page_size: 10 }),
  ...extra,
});
const t = (k: string) => k;

describe("per-type fields and settings, as data", () => {
  test("the types of spec 001 §3 with special fields have them in the catalogue", () => {
    for (const id of [1, 2, 3, 5, 8, 15, 18, 21, 22, 23, 33, 36, 37, 39, 40, 41, 45])
      expect({ id, has: !!TYPE_FIELDS[id] }).toEqual({ id, has: true });
    expect(TYPE_FIELDS[18]!.other).toMatchObject({ defaultValue: "v2.1" });
    expect(TYPE_FIELDS[18]!.other!.options).toContain("v3.5");
    expect(CHANNEL_TYPES.find((t) => t.id === 11)).toMatchObject({ kind: "retired", replacedBy: 24 });
  });

  test("writeSetting sets and removes one key and keeps the others", () => {
    const text = writeSetting('{"custom": 1}', "proxy", "http://p:1");
    expect(readSetting(text)).toEqual({ custom: 1, proxy: "http://p:1" });
    expect(readSetting(writeSetting(text, "proxy", ""))).toEqual({ custom: 1 });
    expect(writeSetting("", "force_format", false)).toBe("");
  });

  test("validation: a proxy must be http(s) or socks5(h); a required per-type field must be filled", () => {
    const v = { ...emptyChannel(), name: "a", key: "k", models: ["m"] };
    expect(validateChannel({ ...v, setting: '{"proxy": "ftp://x"}' }, true, t)).toBe("ops.ch.proxyInvalid");
    expect(validateChannel({ ...v, setting: '{"proxy": "socks5h://u:p@h:1080"}' }, true, t)).toBeNull();
    expect(validateChannel({ ...v, type: 39 }, true, t)).toBe("ops.ch.otherRequired");
    expect(validateChannel({ ...v, type: 39, other: "acct" }, true, t)).toBeNull();
  });
});

describe("channel form settings", () => {
  test("proxy, system prompt and switches are saved into setting; unknown keys stay", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/7": ok({
          id: 7,
          name: "c",
          type: 1,
          models: "m",
          group: "default",
          key: "",
          setting: '{"custom_key": 1}',
        }),
        "PUT /api/channel/": ok(),
      }),
    );
    await renderApp("/channel/edit/7", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("c"));
    fireEvent.change(screen.getByTestId("setting-proxy"), { target: { value: "socks5://u:p@127.0.0.1:1080" } });
    fireEvent.change(screen.getByTestId("setting-system-prompt"), { target: { value: "Answer in French." } });
    fireEvent.click(screen.getByTestId("setting-system_prompt_override"));
    fireEvent.click(screen.getByTestId("setting-force_format"));
    fireEvent.click(screen.getByTestId("channel-submit"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    const body = fm.calls.find((c) => c.method === "PUT")!.body;
    expect(JSON.parse(body.setting)).toEqual({
      custom_key: 1,
      proxy: "socks5://u:p@127.0.0.1:1080",
      system_prompt: "Answer in French.",
      system_prompt_override: true,
      force_format: true,
    });
  });

  test("the Responses API choice shows the type's default and is saved as responses_api; a Claude channel has none", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/21": ok({
          id: 21,
          name: "ds",
          type: 43,
          models: "m",
          group: "default",
          key: "",
          setting: '{"custom_key": 1}',
        }),
        "GET /api/channel/22": ok({
          id: 22,
          name: "cl",
          type: 14,
          models: "m",
          group: "default",
          key: "",
          setting: "",
        }),
        "PUT /api/channel/": ok(),
      }),
    );
    await renderApp("/channel/edit/21", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("ds"));
    const select = screen.getByTestId("setting-responses_api");
    expect(select.textContent).toContain("Type default: through chat completions");
    fireEvent.click(select.querySelector(".arco-select-view")!);
    // The options are capitalised like the default; the default's mode reads on from its colon.
    expect(await screen.findByText("Through chat completions")).toBeTruthy();
    fireEvent.click(await screen.findByText("Served by the upstream"));
    fireEvent.click(screen.getByTestId("channel-submit"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    expect(JSON.parse(fm.calls.find((c) => c.method === "PUT")!.body.setting)).toEqual({
      custom_key: 1,
      responses_api: "native",
    });
    cleanup();
    await renderApp("/channel/edit/22", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("cl"));
    expect(screen.queryByTestId("setting-responses_api")).toBeNull();
  });

  test("forwarded client headers show the format's defaults and are saved as forward_headers; a type that converts has none", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/31": ok({
          id: 31,
          name: "an",
          type: 14,
          models: "m",
          group: "default",
          key: "",
          setting: '{"custom_key": 1}',
        }),
        "GET /api/channel/32": ok({
          id: 32,
          name: "bd",
          type: 15,
          models: "m",
          group: "default",
          key: "",
          setting: "",
        }),
        "PUT /api/channel/": ok(),
      }),
    );
    await renderApp("/channel/edit/31", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("an"));
    expect(screen.getByTestId("setting-forward_headers-help").textContent).toContain(
      "anthropic-beta, anthropic-version, x-claude-code-session-id",
    );
    fireEvent.change(screen.getByTestId("setting-forward_headers"), { target: { value: "X-Trace-Id, x-team-*," } });
    fireEvent.click(screen.getByTestId("channel-submit"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    expect(JSON.parse(fm.calls.find((c) => c.method === "PUT")!.body.setting)).toEqual({
      custom_key: 1,
      forward_headers: ["x-trace-id", "x-team-*"],
    });
    cleanup();
    await renderApp("/channel/edit/32", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("bd"));
    expect(screen.queryByTestId("setting-forward_headers")).toBeNull();
  });

  test("a bad proxy address is refused before saving", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/8": ok({ id: 8, name: "c", type: 1, models: "m", group: "default", key: "", setting: "" }),
      }),
    );
    await renderApp("/channel/edit/8", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("c"));
    fireEvent.change(screen.getByTestId("setting-proxy"), { target: { value: "ftp://nope" } });
    fireEvent.click(screen.getByTestId("channel-submit"));
    expect((await screen.findByTestId("form-error")).textContent).toContain("the proxy must be");
    expect(fm.calls.some((c) => c.method === "PUT")).toBe(false);
  });

  test("a Cloudflare channel asks for its account ID; a PaLM2 channel says the API is gone", async () => {
    fm = mockFetch(
      routes({
        "GET /api/channel/9": ok({ id: 9, name: "cf", type: 39, models: "m", group: "default", key: "", other: "" }),
        "GET /api/channel/10": ok({ id: 10, name: "palm", type: 11, models: "m", group: "default", key: "" }),
      }),
    );
    await renderApp("/channel/edit/9", { user: ADMIN });
    await waitFor(() => expect((screen.getByTestId("channel-name") as HTMLInputElement).value).toBe("cf"));
    expect(screen.getByText("Account ID")).toBeTruthy();
    fireEvent.click(screen.getByTestId("channel-submit"));
    expect((await screen.findByTestId("form-error")).textContent).toContain("this channel type needs this field");
    cleanup();
    await renderApp("/channel/edit/10", { user: ADMIN });
    expect((await screen.findByTestId("channel-retired")).textContent).toContain("Google Gemini");
  });
});

describe("multi-key channel keys", () => {
  function keyRoutes() {
    const states = [
      { index: 0, status: 1, key_preview: "sk-aaa…aaaa" },
      {
        index: 1,
        status: 3,
        key_preview: "sk-bbb…bbbb",
        reason: "authentication failed (401): invalid key",
        disabled_time: 1_700_000_000,
      },
      { index: 2, status: 2, key_preview: "sk-ccc…cccc", disabled_time: 1_700_000_100 },
    ];
    const page = () => ({
      keys: states,
      total: states.length,
      page: 1,
      page_size: 20,
      total_pages: 1,
      enabled_count: states.filter((s) => s.status === 1).length,
      manual_disabled_count: states.filter((s) => s.status === 2).length,
      auto_disabled_count: states.filter((s) => s.status === 3).length,
    });
    return routes({
      "GET /api/channel/12": ok({
        id: 12,
        name: "multi",
        type: 1,
        models: "m",
        group: "default",
        key: "",
        key_count: 3,
        channel_info: { is_multi_key: true, multi_key_mode: "random", multi_key_size: 3 },
      }),
      "PUT /api/channel/": ok(),
      "POST /api/channel/multi_key/manage": (c: { body: any }) => {
        if (c.body.action === "get_key_status") return ok(page());
        if (c.body.action === "enable_key") {
          const k = states[c.body.key_index]!;
          Object.assign(k, { status: 1, reason: undefined, disabled_time: undefined });
          return ok(undefined, "key enabled");
        }
        return ok(undefined, "done");
      },
    });
  }

  test("each key's state shows, the automatically disabled one with its reason and time; enabling a key reloads the list", async () => {
    fm = mockFetch(keyRoutes());
    await renderApp("/channel/edit/12", { user: ADMIN });
    const panel = await screen.findByTestId("multi-key-panel");
    await waitFor(() =>
      expect(screen.getByTestId("mk-counts").textContent).toBe("1 enabled · 1 disabled · 1 disabled automatically"),
    );
    expect(screen.getByTestId("mk-status-1").textContent).toBe("Disabled automatically");
    expect(screen.getByTestId("mk-reason-1").textContent).toContain("authentication failed (401): invalid key");
    expect(screen.getByTestId("mk-status-2").textContent).toBe("Disabled");
    expect(panel.textContent).not.toContain("sk-bbbbbbbb");
    fireEvent.click(screen.getByTestId("mk-enable-1"));
    await waitFor(() =>
      expect(screen.getByTestId("mk-counts").textContent).toBe("2 enabled · 1 disabled · 0 disabled automatically"),
    );
    const manage = fm.calls.filter((c) => c.path === "/api/channel/multi_key/manage").map((c) => c.body);
    expect(manage).toContainEqual({ channel_id: 12, action: "enable_key", key_index: 1 });
  });

  test("the rotation mode and added keys are saved with the channel", async () => {
    fm = mockFetch(keyRoutes());
    await renderApp("/channel/edit/12", { user: ADMIN });
    await screen.findByTestId("multi-key-panel");
    fireEvent.change(screen.getByTestId("channel-key"), { target: { value: "sk-new-1\nsk-new-2" } });
    fireEvent.click(screen.getByTestId("mk-append"));
    fireEvent.click(screen.getByTestId("channel-submit"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    expect(fm.calls.find((c) => c.method === "PUT")!.body).toMatchObject({
      id: 12,
      key: "sk-new-1\nsk-new-2",
      key_mode: "append",
      multi_key_mode: "random",
    });
  });
});
