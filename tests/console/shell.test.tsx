import { afterEach, describe, expect, test } from "bun:test";
import { screen, waitFor, fireEvent, within } from "@testing-library/react";
import { ADMIN, USER, location, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

describe("routing", () => {
  test("a guest opening a protected page is sent to /login", async () => {
    fm = mockFetch({});
    await renderApp("/personal");
    await waitFor(() => expect(location()).toBe("/login"));
    expect(await screen.findByPlaceholderText("Username or email")).toBeTruthy();
  });

  test("every path redirects to /setup until setup is done", async () => {
    fm = mockFetch({ "GET /api/setup": ok({ status: false, root_init: false, database_type: "sqlite" }) });
    await renderApp("/pricing", { status: { setup: false } });
    await waitFor(() => expect(location()).toBe("/setup"));
    expect(await screen.findByText("First-run setup")).toBeTruthy();
  });

  test("an unknown path shows the not-found page", async () => {
    fm = mockFetch({});
    await renderApp("/no/such/page");
    expect(await screen.findByText("The page does not exist, please check the address")).toBeTruthy();
  });

  test("a normal user gets the not-found page for admin routes", async () => {
    fm = mockFetch({});
    await renderApp("/setting", { user: USER });
    expect(await screen.findByText("The page does not exist, please check the address")).toBeTruthy();
    expect(fm.calls.some((c) => c.path === "/api/option/")).toBe(false);
  });
});

import { render } from "@testing-library/react";
import { MemoryRouter } from "react-router-dom";
import { sidebarSections, initialCollapsed, selectedKey } from "../../console/layout/Sidebar.tsx";
import { sidebarHidden } from "../../console/layout/Shell.tsx";
import { TopBar } from "../../console/layout/TopBar.tsx";
import { AppStateProvider } from "../../console/lib/app-state.tsx";
import { BASE_STATUS } from "./helpers.tsx";

const keysOf = (
  admin: boolean,
  flags: Partial<{ dataExport: boolean; drawing: boolean; task: boolean; chats: Array<Record<string, string>> }> = {},
) =>
  sidebarSections({
    t: (k) => k,
    admin,
    chats: flags.chats ?? [],
    dataExport: !!flags.dataExport,
    drawing: !!flags.drawing,
    task: !!flags.task,
  }).flatMap((s) => s.items.flatMap((i) => [i.key, ...(i.children ?? []).map((c) => c.key)]));

describe("sidebar", () => {
  test("the admin section (channels, redemption, users, settings) is for admins only", () => {
    const admin = keysOf(true);
    for (const k of ["/channel", "/redemption", "/user", "/setting"]) expect(admin).toContain(k);
    const user = keysOf(false);
    for (const k of ["/channel", "/redemption", "/user", "/setting"]) expect(user).not.toContain(k);
    for (const k of ["/playground", "/token", "/log", "/topup", "/personal"]) expect(user).toContain(k);
  });

  test("the dashboard item appears only with data export on", () => {
    expect(keysOf(false)).not.toContain("/detail");
    expect(keysOf(false, { dataExport: true })).toContain("/detail");
  });

  test("chat sub-items come from the stored chats, each going to /chat/{index}", () => {
    const keys = keysOf(false, { chats: [{ One: "https://a" }, { Two: "https://b" }] });
    expect(keys).toContain("/chat/0");
    expect(keys).toContain("/chat/1");
  });

  test("hidden on home, chat and setup paths", () => {
    for (const p of ["/", "/setup", "/chat/0", "/chat2link"]) expect(sidebarHidden(p)).toBe(true);
    for (const p of ["/token", "/setting", "/login"]) expect(sidebarHidden(p)).toBe(false);
  });

  test("collapse starts from default_collapse_sidebar and then remembers the user's choice", () => {
    localStorage.clear();
    expect(initialCollapsed()).toBe(false);
    localStorage.setItem("default_collapse_sidebar", "true");
    expect(initialCollapsed()).toBe(true);
    localStorage.setItem("sidebar-collapsed", "false");
    expect(initialCollapsed()).toBe(false);
  });

  test("rendered for a normal user it has no admin items and is 200 px wide; collapsing makes it 60 px and is remembered", async () => {
    fm = mockFetch({});
    await renderApp("/personal", { user: USER });
    const sider = await waitFor(() => document.querySelector(".sy-sider") as HTMLElement);
    expect(within(sider).queryByText("Channels")).toBeNull();
    expect(within(sider).getByText("API tokens")).toBeTruthy();
    expect(within(sider).getByText("ChatGPT Next Web")).toBeTruthy();
    expect(sider.style.width).toBe("200px");
    fireEvent.click(within(sider).getByTestId("sider-toggle"));
    await waitFor(() => expect(sider.style.width).toBe("60px"));
    expect(localStorage.getItem("sidebar-collapsed")).toBe("true");
  });

  test("sub-pages light up their list's item; the password-reset page is not a user page", () => {
    expect(selectedKey("/channel/edit/3")).toBe("/channel");
    expect(selectedKey("/channel/add")).toBe("/channel");
    expect(selectedKey("/user/edit/2")).toBe("/user");
    expect(selectedKey("/user/edit")).toBe("/user");
    expect(selectedKey("/user/reset")).toBe("/user/reset");
    expect(selectedKey("/token")).toBe("/token");
  });

  test("an admin sees the admin items", async () => {
    fm = mockFetch({});
    await renderApp("/personal", { user: ADMIN });
    const sider = await waitFor(() => document.querySelector(".sy-sider") as HTMLElement);
    expect(within(sider).getByText("Channels")).toBeTruthy();
    expect(within(sider).getByText("System settings")).toBeTruthy();
  });
});

function renderTopBar(status: Record<string, unknown>, today = new Date(2026, 5, 1)) {
  localStorage.clear();
  return render(
    <MemoryRouter>
      <AppStateProvider initialStatus={{ ...BASE_STATUS, ...status }}>
        <TopBar today={today} />
      </AppStateProvider>
    </MemoryRouter>,
  );
}

describe("top bar", () => {
  test("self-use badge hides register; demo badge shows in demo mode", async () => {
    const { unmount } = renderTopBar({ self_use_mode_enabled: true });
    expect(screen.getByText("Self-use mode")).toBeTruthy();
    expect(screen.queryByText("Register")).toBeNull();
    unmount();
    renderTopBar({ demo_site_enabled: true });
    expect(screen.getByText("Demo site")).toBeTruthy();
    expect(screen.getByText("Register")).toBeTruthy();
  });

  test("a docs link appears only when configured", () => {
    const { unmount } = renderTopBar({});
    expect(screen.queryByText("Docs")).toBeNull();
    unmount();
    renderTopBar({ docs_link: "https://docs.example.test" });
    expect(screen.getByText("Docs")).toBeTruthy();
  });

  test("the festive item appears on January 1st only", () => {
    const { unmount } = renderTopBar({}, new Date(2027, 0, 1, 10));
    expect(screen.getByTestId("new-year")).toBeTruthy();
    unmount();
    renderTopBar({}, new Date(2027, 0, 2, 10));
    expect(screen.queryByTestId("new-year")).toBeNull();
  });
});

describe("theme and language", () => {
  test("the theme switch applies Arco's dark theme and stores theme-mode", async () => {
    fm = mockFetch({});
    await renderApp("/about");
    fm.on("GET /api/about", ok(""));
    fireEvent.click(screen.getByTestId("theme-toggle"));
    await waitFor(() => expect(document.body.getAttribute("arco-theme")).toBe("dark"));
    expect(localStorage.getItem("theme-mode")).toBe("dark");
    fireEvent.click(screen.getByTestId("theme-toggle"));
    await waitFor(() => expect(document.body.getAttribute("arco-theme")).toBeNull());
    expect(localStorage.getItem("theme-mode")).toBe("light");
  });

  test("choosing Russian re-renders the shell in Russian, Arco's own texts included, and stores i18nextLng", async () => {
    fm = mockFetch({ "GET /api/about": ok("") });
    await renderApp("/about");
    expect(screen.getAllByText("About").length).toBeGreaterThan(0);
    fireEvent.click(screen.getByTestId("language-menu"));
    fireEvent.click(await screen.findByText("Русский"));
    await waitFor(() => expect(screen.getAllByText("О сайте").length).toBeGreaterThan(0));
    expect(screen.getByText("Цены")).toBeTruthy();
    expect(localStorage.getItem("i18nextLng")).toBe("ru");
  });

  test("the footer shows the custom HTML when set, else the credit line", async () => {
    fm = mockFetch({ "GET /api/about": ok("") });
    const { unmount } = await renderApp("/about", {
      status: { footer_html: '<span data-testid="custom">Custom footer</span>' },
    });
    expect(await screen.findByTestId("custom")).toBeTruthy();
    unmount();
    await renderApp("/about", { status: { footer_html: "" } });
    expect(await screen.findByText(/an open-source AI model gateway/)).toBeTruthy();
  });
});
