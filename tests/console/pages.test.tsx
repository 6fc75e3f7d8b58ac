import { afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, waitFor } from "@testing-library/react";
import {
  ADMIN,
  GoTo,
  USER,
  location,
  mockFetch,
  ok,
  fail,
  renderApp,
  resetDom,
  sleep,
  type FetchMock,
} from "./helpers.tsx";

let fm: FetchMock;
afterEach(() => {
  fm?.restore();
  resetDom();
});

describe("home and about", () => {
  test("HomePageContent in Markdown is rendered safely", async () => {
    fm = mockFetch({
      "GET /api/home_page_content": ok("# Hello gateway\n<img src=x onerror=alert(1)>"),
      "GET /api/notice": ok(""),
    });
    await renderApp("/");
    const h = await screen.findByText("Hello gateway");
    expect(h.tagName).toBe("H1");
    expect(document.querySelector("img[onerror]")).toBeNull();
    expect(screen.getByText("<img src=x onerror=alert(1)>")).toBeTruthy();
  });

  test("a URL as HomePageContent is shown in an iframe", async () => {
    fm = mockFetch({
      "GET /api/home_page_content": ok("https://docs.example.test/welcome"),
      "GET /api/notice": ok(""),
    });
    await renderApp("/");
    await waitFor(() =>
      expect(document.querySelector("iframe")?.getAttribute("src")).toBe("https://docs.example.test/welcome"),
    );
  });

  test("HTML content is shown as written; the notice appears above it", async () => {
    fm = mockFetch({
      "GET /api/home_page_content": ok('<div id="custom-home">Custom</div>'),
      "GET /api/notice": ok("**Maintenance** tonight"),
    });
    await renderApp("/");
    await waitFor(() => expect(document.getElementById("custom-home")).toBeTruthy());
    expect((await screen.findByText("Maintenance")).tagName).toBe("STRONG");
  });

  test("without content the home page introduces the site", async () => {
    fm = mockFetch({ "GET /api/home_page_content": ok(""), "GET /api/notice": ok("") });
    await renderApp("/", { status: { system_name: "Yard" } });
    expect(await screen.findByText("Welcome to Yard")).toBeTruthy();
  });

  test("about renders its Markdown", async () => {
    fm = mockFetch({ "GET /api/about": ok("Run by **ops**") });
    await renderApp("/about");
    expect((await screen.findByText("ops")).tagName).toBe("STRONG");
  });
});

describe("third-party callback", () => {
  test("message 'bind' means the account was bound: go to personal settings", async () => {
    fm = mockFetch({
      "GET /api/oauth/github": ok(undefined, "bind"),
      "GET /api/user/self": ok(USER),
      "GET /api/user/models": ok([]),
    });
    await renderApp("/oauth/github?code=abc&state=xyz", { user: USER });
    await waitFor(() => expect(location()).toBe("/personal"));
    const call = fm.calls.find((c) => c.path === "/api/oauth/github")!;
    expect(call.query.get("code")).toBe("abc");
    expect(call.query.get("state")).toBe("xyz");
  });

  test("a login stores the user and lands on /", async () => {
    fm = mockFetch({
      "GET /api/oauth/oidc": ok({ id: 9, username: "oidc_user", role: 1 }),
      "GET /api/home_page_content": ok(""),
      "GET /api/notice": ok(""),
    });
    await renderApp("/oauth/oidc?code=c&state=s");
    await waitFor(() => expect(location()).toBe("/"));
    expect(JSON.parse(localStorage.getItem("user")!).username).toBe("oidc_user");
  });

  test("the server's sign-in refusals are translated (a stale state, in Chinese)", async () => {
    fm = mockFetch({
      "GET /api/oauth/github": fail(
        "the sign-in state is missing, expired or does not match this browser; start the sign-in again",
      ),
      "GET /api/option/": ok([]),
    });
    await renderApp("/oauth/github?code=c&state=old", { user: ADMIN, lang: "zh" });
    expect(await screen.findByText("登录状态缺失、已过期或不属于此浏览器，请重新发起登录")).toBeTruthy();
  });

  test("a failure shows the server message and goes to /setting with a note", async () => {
    fm = mockFetch({ "GET /api/oauth/linuxdo": fail("state is invalid"), "GET /api/option/": ok([]) });
    await renderApp("/oauth/linuxdo?code=c&state=bad", { user: ADMIN });
    expect(await screen.findByText("state is invalid")).toBeTruthy();
    await waitFor(() => expect(location()).toBe("/setting"));
    expect(await screen.findByText("Third-party sign-in failed; check the provider settings below")).toBeTruthy();
  });
});

describe("expired session", () => {
  test("a 401 from any call sends the user to /login?expired=true and forgets them", async () => {
    fm = mockFetch({
      "GET /api/user/self": () =>
        new Response(JSON.stringify({ success: false, message: "not logged in or login expired" }), { status: 401 }),
      "GET /api/user/models": ok([]),
    });
    await renderApp("/personal", { user: USER });
    await waitFor(() => expect(location()).toBe("/login?expired=true"));
    expect(localStorage.getItem("user")).toBeNull();
    expect(
      (await screen.findAllByText("Not logged in or the login has expired, please log in again")).length,
    ).toBeGreaterThan(0);
  });

  test("after a 401 the in-memory user is gone too: no avatar in the top bar, and guards send protected pages to /login", async () => {
    fm = mockFetch({
      "GET /api/user/self": () =>
        new Response(JSON.stringify({ success: false, message: "not logged in or login expired" }), { status: 401 }),
      "GET /api/user/models": ok([]),
    });
    await renderApp("/personal", { user: USER, extra: <GoTo to="/personal" /> });
    expect(await screen.findByTestId("avatar-menu")).toBeTruthy();
    await waitFor(() => expect(location()).toBe("/login?expired=true"));
    await waitFor(() => expect(screen.queryByTestId("avatar-menu")).toBeNull());
    expect(screen.queryAllByText("Alice").length).toBe(0);
    const selfCalls = fm.calls.filter((c) => c.path === "/api/user/self").length;
    // Going back to a login-only page: the guard redirects to plain /login instead of rendering the page again.
    fireEvent.click(screen.getByTestId("goto-/personal"));
    await waitFor(() => expect(location()).toBe("/login"));
    await sleep(100);
    expect(fm.calls.filter((c) => c.path === "/api/user/self").length).toBe(selfCalls);
  });

  test("a status that cannot be loaded is reported", async () => {
    localStorage.clear();
    fm = mockFetch({ "GET /api/status": () => new Response("oops", { status: 502 }) });
    const { render } = await import("@testing-library/react");
    const { MemoryRouter } = await import("react-router-dom");
    const App = (await import("../../console/App.tsx")).default;
    render(
      <MemoryRouter initialEntries={["/about"]}>
        <App />
      </MemoryRouter>,
    );
    expect(await screen.findByText(/Failed to load the site status/)).toBeTruthy();
  });
});
