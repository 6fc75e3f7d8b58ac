import { afterEach, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, within } from "@testing-library/react";
import { ADMIN, mockFetch, ok, fail, optionList, renderApp, resetDom, sleep, type FetchMock } from "./helpers.tsx";
import { OPTION_DEFAULTS } from "../../server/modules/option/defaults.ts";
import {
  addDomain,
  duplicateTopLevelKeys,
  fieldProblem,
  groupNamesProblem,
  outgoingValues,
  rateLimitGroupProblem,
  wellKnownProblem,
  type FieldDef,
} from "../../console/pages/setting/fields.ts";
import { RELEASE_FEED_URL } from "../../console/pages/setting/tabs/other.tsx";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

function settingsApi(over: Record<string, string> = {}, extra: Record<string, unknown> = {}) {
  return mockFetch({
    "GET /api/option/": ok(optionList(over)),
    "PUT /api/option/": ok(undefined, "saved"),
    "GET /api/status": ok({ setup: true }),
    ...extra,
  });
}

const puts = () => fm.calls.filter((c) => c.method === "PUT" && c.path === "/api/option/").map((c) => c.body);
const section = (title: string) => screen.getByTestId(`section-${title}`);
const field = (name: string) => document.querySelector(`[name="${name}"]`) as HTMLInputElement;
const change = (name: string, value: string) => fireEvent.change(field(name), { target: { value } });

describe("option field rules", () => {
  const num: FieldDef = { key: "N", label: "n", type: "number", min: 1, max: 10, integer: true };
  test("numbers: 'please enter a number', integer, min and max", () => {
    expect(fieldProblem(num, "abc", {})).toBe("common.enterNumber");
    expect(fieldProblem(num, "", {})).toBe("common.enterNumber");
    expect(fieldProblem(num, "1.5", {})).toBe("settings.integerRequired");
    expect(fieldProblem(num, "0", {})).toBe("settings.tooSmall");
    expect(fieldProblem(num, "11", {})).toBe("settings.tooLarge");
    expect(fieldProblem(num, "5", {})).toBeNull();
  });

  test("JSON fields must parse; a disabled field is not checked", () => {
    const json: FieldDef = { key: "J", label: "j", type: "json" };
    expect(fieldProblem(json, "{bad", {})).toBe("settings.invalidJson");
    expect(fieldProblem({ ...json, jsonMessage: "system.topupGroupRatioInvalid" }, "{bad", {})).toBe(
      "system.topupGroupRatioInvalid",
    );
    expect(fieldProblem(json, '{"a":1}', {})).toBeNull();
    expect(fieldProblem({ ...num, disabledWhen: () => true }, "abc", {})).toBeNull();
  });

  test("addresses lose their trailing slash; secrets are sent only when typed; immediate switches are not in the section save", () => {
    const fields: FieldDef[] = [
      { key: "ServerAddress", label: "", type: "url" },
      { key: "SMTPToken", label: "", type: "secret" },
      { key: "EpayKey", label: "", type: "secret" },
      { key: "RegisterEnabled", label: "", type: "switch", immediate: true },
    ];
    expect(
      outgoingValues(fields, {
        ServerAddress: "https://gw.test///",
        SMTPToken: "",
        EpayKey: "k",
        RegisterEnabled: "true",
      }),
    ).toEqual({ ServerAddress: "https://gw.test", EpayKey: "k" });
  });

  test("email whitelist: domain pattern and no duplicates", () => {
    expect(addDomain("gmail.com", "not a domain")).toEqual({ error: "system.domainInvalid" });
    expect(addDomain("gmail.com,qq.com", "QQ.com")).toEqual({ error: "system.domainDuplicate" });
    expect(addDomain("gmail.com", "proton.me")).toEqual({ list: "gmail.com,proton.me" });
  });

  test("group names must be unique; rate-limit groups need [>=0, >=1]; OIDC well-known needs http(s)", () => {
    expect(duplicateTopLevelKeys('{"vip": 1, "x": {"vip": 2}, "vip": 3}')).toEqual(["vip"]);
    expect(groupNamesProblem('{"default": 1, "default": 2}')).toBe("operation.groupDuplicate");
    expect(groupNamesProblem('{"default": 1, "vip": 2}')).toBeNull();
    expect(rateLimitGroupProblem('{"default": [0, 1], "vip": [200, 100]}')).toBeNull();
    expect(rateLimitGroupProblem('{"default": [-1, 1]}')).toBe("ratelimit.groupShape");
    expect(rateLimitGroupProblem('{"default": [10, 0]}')).toBe("ratelimit.groupShape");
    expect(rateLimitGroupProblem('{"default": 5}')).toBe("ratelimit.groupShape");
    expect(rateLimitGroupProblem("{oops")).toBe("settings.invalidJson");
    expect(wellKnownProblem("ftp://idp.test")).toBe("system.wellKnownScheme");
    expect(wellKnownProblem("https://idp.test/.well-known/openid-configuration")).toBeNull();
  });
});

describe("settings page", () => {
  test("a normal user never loads the options", async () => {
    fm = settingsApi();
    await renderApp("/setting", { user: { ...ADMIN, role: 1 } });
    await screen.findByText("The page does not exist, please check the address");
    expect(fm.calls.some((c) => c.path === "/api/option/")).toBe(false);
  });

  test("saving sends only the changed keys, one PUT each; saving again says nothing changed", async () => {
    fm = settingsApi();
    await renderApp("/setting", { user: ADMIN });
    await waitFor(() => expect(field("RetryTimes")).toBeTruthy());
    change("RetryTimes", "3");
    fireEvent.click(within(section("General")).getByTestId("opt-DisplayTokenStatEnabled"));
    fireEvent.click(within(section("General")).getByText("Save General"));
    await waitFor(() =>
      expect(puts()).toEqual([
        { key: "RetryTimes", value: "3" },
        { key: "DisplayTokenStatEnabled", value: "false" },
      ]),
    );
    expect((await screen.findAllByText("Saved")).length).toBeGreaterThan(0);
    fireEvent.click(within(section("General")).getByText("Save General"));
    expect(await screen.findByText("You don't seem to have changed anything")).toBeTruthy();
    expect(puts()).toHaveLength(2);
  });

  test("only the super admin edits the top-up link: an admin sees it disabled with a hint and never sends it", async () => {
    fm = settingsApi({ TopUpLink: "https://shop.example.test" });
    await renderApp("/setting", { user: { ...ADMIN, role: 10 } });
    await waitFor(() => expect(field("TopUpLink")).toBeTruthy());
    expect(field("TopUpLink").disabled).toBe(true);
    expect(field("TopUpLink").value).toBe("https://shop.example.test");
    expect(within(section("General")).getByText("Only the super admin can change the top-up link")).toBeTruthy();
    change("RetryTimes", "4");
    fireEvent.click(within(section("General")).getByText("Save General"));
    await waitFor(() => expect(puts()).toEqual([{ key: "RetryTimes", value: "4" }]));
  });

  test("the super admin can change the top-up link", async () => {
    fm = settingsApi();
    await renderApp("/setting", { user: ADMIN });
    await waitFor(() => expect(field("TopUpLink")).toBeTruthy());
    expect(field("TopUpLink").disabled).toBe(false);
    expect(screen.queryByText("Only the super admin can change the top-up link")).toBeNull();
    change("TopUpLink", "https://pay.example.test");
    fireEvent.click(within(section("General")).getByText("Save General"));
    await waitFor(() => expect(puts()).toEqual([{ key: "TopUpLink", value: "https://pay.example.test" }]));
  });

  test("invalid JSON is flagged on blur and blocks the save with 'please check input'", async () => {
    fm = settingsApi();
    await renderApp("/setting", { user: ADMIN });
    await waitFor(() => expect(field("Chats")).toBeTruthy());
    change("Chats", "[{oops");
    fireEvent.blur(field("Chats"));
    expect(await screen.findByText("Not a valid JSON string")).toBeTruthy();
    fireEvent.click(within(section("General")).getByText("Save General"));
    expect(await screen.findByText("Please check your input")).toBeTruthy();
    expect(puts()).toEqual([]);
  });

  test("a failed key is reported as a partial failure", async () => {
    fm = settingsApi(
      {},
      { "PUT /api/option/": (c: any) => (c.body.key === "QuotaForInviter" ? fail("bad value") : ok()) },
    );
    await renderApp("/setting", { user: ADMIN });
    fireEvent.click(await screen.findByText("Quota", { selector: ".arco-tabs-header-title-text" }));
    await waitFor(() => expect(field("QuotaForNewUser")).toBeTruthy());
    change("QuotaForNewUser", "1000");
    change("QuotaForInviter", "2000");
    fireEvent.click(within(section("Quota")).getByText("Save Quota"));
    expect(await screen.findByText(/Some saves failed, please retry: QuotaForInviter \(bad value\)/)).toBeTruthy();
    expect(puts().map((b: any) => b.key)).toEqual(["QuotaForNewUser", "QuotaForInviter"]);
  });

  test("the tab comes from ?tab=; login toggles save immediately; turning off password login asks first", async () => {
    fm = settingsApi();
    await renderApp("/setting?tab=system", { user: ADMIN });
    const login = await waitFor(() => section("Login and registration"));
    fireEvent.click(within(login).getByTestId("opt-RegisterEnabled"));
    await waitFor(() => expect(puts()).toEqual([{ key: "RegisterEnabled", value: "false" }]));
    fireEvent.click(within(login).getByTestId("opt-PasswordLoginEnabled"));
    const dialog = await screen.findByText("Confirm cancelling password login");
    const modal = dialog.closest(".arco-modal") as HTMLElement;
    fireEvent.click(within(modal).getByText("Cancel"));
    await new Promise((r) => setTimeout(r, 300));
    expect(within(login).getByTestId("opt-PasswordLoginEnabled").getAttribute("aria-checked")).toBe("true");
    expect(puts()).toHaveLength(1);
    fireEvent.click(within(login).getByTestId("opt-PasswordLoginEnabled"));
    const dialogs = await waitFor(() => {
      const all = screen.getAllByText("Confirm cancelling password login");
      if (all.length < 2) throw new Error("second dialog not open yet");
      return all;
    });
    const modal2 = dialogs[dialogs.length - 1].closest(".arco-modal") as HTMLElement;
    fireEvent.click(within(modal2).getByText("OK"));
    await waitFor(() => expect(puts()).toContainEqual({ key: "PasswordLoginEnabled", value: "false" }));
  });

  test("server address is saved without a trailing slash; payment needs it first; secrets only when typed", async () => {
    fm = settingsApi();
    await renderApp("/setting?tab=system", { user: ADMIN });
    await waitFor(() => expect(field("PayAddress")).toBeTruthy());
    change("EpayId", "1001");
    fireEvent.click(within(section("Payment")).getByText("Save Payment"));
    expect(await screen.findByText("Please fill in and save the server address first")).toBeTruthy();
    expect(puts()).toEqual([]);
    change("ServerAddress", "https://gw.example.com/");
    fireEvent.click(within(section("General")).getByText("Save General"));
    await waitFor(() => expect(puts()).toEqual([{ key: "ServerAddress", value: "https://gw.example.com" }]));
    fireEvent.click(within(section("Payment")).getByText("Save Payment"));
    await waitFor(() => expect(puts()).toHaveLength(2));
    expect(puts()[1]).toEqual({ key: "EpayId", value: "1001" });
    fireEvent.change(section("SMTP").querySelector('input[type="password"]')!, { target: { value: "smtp-secret" } });
    fireEvent.click(within(section("SMTP")).getByText("Save SMTP"));
    await waitFor(() => expect(puts()).toContainEqual({ key: "SMTPToken", value: "smtp-secret" }));
  });

  test("an invalid top-up group ratio reads 'top-up group ratio is not a valid JSON string'", async () => {
    fm = settingsApi({ ServerAddress: "https://gw.test" });
    await renderApp("/setting?tab=system", { user: ADMIN });
    await waitFor(() => expect(field("TopupGroupRatio")).toBeTruthy());
    change("TopupGroupRatio", "{nope");
    fireEvent.blur(field("TopupGroupRatio"));
    expect(await screen.findByText("The top-up group ratio is not a valid JSON string")).toBeTruthy();
  });

  test("the email whitelist rejects bad and duplicate domains where they are typed", async () => {
    fm = settingsApi();
    await renderApp("/setting?tab=system", { user: ADMIN });
    await waitFor(() => expect(field("EmailDomainWhitelist-new")).toBeTruthy());
    const sec = section("Email domains");
    change("EmailDomainWhitelist-new", "gmail.com");
    fireEvent.click(within(sec).getByText("Add"));
    expect(await within(sec).findByText("Already in the whitelist")).toBeTruthy();
    change("EmailDomainWhitelist-new", "bad domain");
    fireEvent.click(within(sec).getByText("Add"));
    expect(await within(sec).findByText("Not a valid domain, e.g. gmail.com")).toBeTruthy();
    change("EmailDomainWhitelist-new", "proton.me");
    fireEvent.click(within(sec).getByText("Add"));
    fireEvent.click(within(sec).getByText("Save Email domains"));
    await waitFor(() =>
      expect(puts()).toEqual([
        { key: "EmailDomainWhitelist", value: OPTION_DEFAULTS.EmailDomainWhitelist + ",proton.me" },
      ]),
    );
  });

  test("rate-limit groups are checked on blur; the success count is at least 1", async () => {
    fm = settingsApi();
    await renderApp("/setting?tab=ratelimit", { user: ADMIN });
    await waitFor(() => expect(field("ModelRequestRateLimitGroup")).toBeTruthy());
    change("ModelRequestRateLimitGroup", '{"vip": [10, 0]}');
    fireEvent.blur(field("ModelRequestRateLimitGroup"));
    expect(await screen.findByText("Each group needs [max requests ≥ 0, max successful requests ≥ 1]")).toBeTruthy();
    change("ModelRequestRateLimitSuccessCount", "0");
    fireEvent.blur(field("ModelRequestRateLimitSuccessCount"));
    // The help text says "At least 1" too; the error adds a second one under the field.
    await waitFor(() => expect(screen.getAllByText("At least 1")).toHaveLength(2));
  });

  test("the ping interval is disabled until pings are enabled; thinking budget is 0.1 to 1", async () => {
    fm = settingsApi();
    await renderApp("/setting?tab=models", { user: ADMIN });
    await waitFor(() => expect(field("general_setting.ping_interval_seconds")).toBeTruthy());
    expect(field("general_setting.ping_interval_seconds").disabled).toBe(true);
    fireEvent.click(within(section("Global")).getByTestId("opt-general_setting.ping_interval_enabled"));
    await waitFor(() => expect(field("general_setting.ping_interval_seconds").disabled).toBe(false));
    change("claude.thinking_adapter_budget_tokens_percentage", "1.5");
    fireEvent.blur(field("claude.thinking_adapter_budget_tokens_percentage"));
    expect(await screen.findByText("At most 1")).toBeTruthy();
  });

  test("log clearing sends target_timestamp and reports the count", async () => {
    fm = settingsApi({}, { "DELETE /api/log/": ok(42) });
    await renderApp("/setting", { user: ADMIN });
    fireEvent.click(await screen.findByText("Logs", { selector: ".arco-tabs-header-title-text" }));
    fireEvent.click(await screen.findByText("Clear logs"));
    const pop = await screen.findByText("Delete all logs before the chosen time? This cannot be undone.");
    fireEvent.click(within(pop.closest(".arco-popconfirm") as HTMLElement).getByText("OK"));
    expect(await screen.findByText("42 logs cleared")).toBeTruthy();
    const call = fm.calls.find((c) => c.method === "DELETE")!;
    const ts = Number(call.query.get("target_timestamp"));
    const monthAgo = Date.now() / 1000 - 30 * 86400;
    expect(Math.abs(ts - monthAgo)).toBeLessThan(120);
  });

  test("log clearing with no time chosen says 'please select log record time' and sends nothing", async () => {
    fm = settingsApi({}, { "DELETE /api/log/": ok(1) });
    await renderApp("/setting", { user: ADMIN });
    fireEvent.click(await screen.findByText("Logs", { selector: ".arco-tabs-header-title-text" }));
    const picker = await screen.findByTestId("log-clear-time");
    expect((picker.querySelector("input") as HTMLInputElement).value).not.toBe("");
    // Empty the picker with its clear icon.
    fireEvent.mouseEnter(picker);
    fireEvent.click(picker.querySelector(".arco-picker-clear-icon")!);
    await waitFor(() => expect((picker.querySelector("input") as HTMLInputElement).value).toBe(""));
    fireEvent.click(screen.getByText("Clear logs"));
    const pop = await screen.findByText("Delete all logs before the chosen time? This cannot be undone.");
    fireEvent.click(within(pop.closest(".arco-popconfirm") as HTMLElement).getByText("OK"));
    expect(await screen.findByText("Please select the log record time")).toBeTruthy();
    await sleep(50);
    expect(fm.calls.some((c) => c.method === "DELETE")).toBe(false);
  });

  test("the update check fails gracefully offline and recognises the latest version", async () => {
    const feedPath = new URL(RELEASE_FEED_URL).pathname;
    fm = settingsApi(
      {},
      {
        [`GET ${feedPath}`]: () => {
          throw new TypeError("network down");
        },
      },
    );
    await renderApp("/setting?tab=other", { user: ADMIN, status: { version: "v0.1.0" } });
    fireEvent.click(await screen.findByText("Check for updates"));
    expect(await screen.findByText("Failed to check for updates, please try later")).toBeTruthy();
    fm.on(`GET ${feedPath}`, () => ({ tag_name: "v0.1.0", body: "" }));
    fireEvent.click(screen.getByText("Check for updates"));
    expect(await screen.findByText("Already the latest version")).toBeTruthy();
  });

  test("each site text's hint sits under its field, above its save button", async () => {
    fm = settingsApi();
    await renderApp("/setting?tab=other", { user: ADMIN });
    await waitFor(() => expect(field("Notice")).toBeTruthy());
    const hint = screen.getAllByText("Markdown or HTML; a URL alone is shown in a frame")[0];
    const save = screen.getByText("Save Home page content");
    expect(hint.compareDocumentPosition(save) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(field("HomePageContent").compareDocumentPosition(hint) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
  });

  test("notice and the other site texts each save on their own with an updated message", async () => {
    fm = settingsApi();
    await renderApp("/setting?tab=other", { user: ADMIN });
    await waitFor(() => expect(field("Notice")).toBeTruthy());
    change("Notice", "**Maintenance** tonight");
    fireEvent.click(screen.getByText("Save Notice"));
    expect(await screen.findByText("Notice updated")).toBeTruthy();
    expect(puts()).toEqual([{ key: "Notice", value: "**Maintenance** tonight" }]);
  });
});
