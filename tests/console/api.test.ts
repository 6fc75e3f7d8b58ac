import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { waitFor } from "@testing-library/react";
import { api, setNavigator, saveOptions, EXPIRED_LOGIN_PATH } from "../../console/api/index.ts";
import { changeLanguage } from "../../console/i18n/index.ts";
import { mockFetch, ok, fail, type Call, type FetchMock } from "./helpers.tsx";

let fm: FetchMock;
let navigated: string[] = [];
beforeEach(async () => {
  localStorage.clear();
  navigated = [];
  setNavigator((to) => navigated.push(to));
  await changeLanguage("en");
});
afterEach(() => fm?.restore());
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const status =
  (code: number, body: unknown = { success: false, message: "x" }) =>
  () =>
    new Response(JSON.stringify(body), { status: code });

describe("the API client", () => {
  test("sends the stored user id as New-Api-User and same-origin credentials", async () => {
    localStorage.setItem("user", JSON.stringify({ id: 42, username: "u", role: 1 }));
    let init: RequestInit = {};
    const original = globalThis.fetch;
    globalThis.fetch = (async (_: any, i: RequestInit) => {
      init = i;
      return Response.json(ok([1]));
    }) as typeof fetch;
    try {
      const r = await api.get("/api/user/self");
      expect(r.success).toBe(true);
      expect((init.headers as any)["New-Api-User"]).toBe("42");
      expect(init.credentials).toBe("same-origin");
    } finally {
      globalThis.fetch = original;
    }
  });

  test("401 clears the stored user and redirects to /login?expired=true", async () => {
    localStorage.setItem("user", JSON.stringify({ id: 1, username: "u", role: 1 }));
    fm = mockFetch({
      "GET /api/user/self": status(401, { success: false, message: "not logged in or login expired" }),
    });
    void api.get("/api/user/self");
    await waitFor(() => expect(navigated).toEqual([EXPIRED_LOGIN_PATH]));
    expect(localStorage.getItem("user")).toBeNull();
  });

  test("a call answered 401 that redirected never settles, so the screen left behind adds no error toast", async () => {
    localStorage.setItem("user", JSON.stringify({ id: 1, username: "u", role: 1 }));
    fm = mockFetch({
      "GET /api/token/": status(401, { success: false, message: "the session has ended, please log in again" }),
    });
    const outcome = await Promise.race([
      api.get("/api/token/").then(() => "settled"),
      sleep(100).then(() => "pending"),
    ]);
    expect(outcome).toBe("pending");
    expect(navigated).toEqual([EXPIRED_LOGIN_PATH]);
  });

  test("on the login page itself a 401 is answered like any failure (nothing to navigate to)", async () => {
    history.replaceState(null, "", "/login");
    try {
      fm = mockFetch({
        "GET /api/user/self": status(401, { success: false, message: "the session has ended, please log in again" }),
      });
      const r = await api.get("/api/user/self");
      expect(r).toMatchObject({ success: false, status: 401, message: "The session has ended, please log in again" });
      expect(navigated).toEqual([]);
    } finally {
      history.replaceState(null, "", "/");
    }
  });

  test("a wrong password on login is an answer, not an expired session", async () => {
    fm = mockFetch({
      "POST /api/user/login": status(401, fail("username or password is wrong, or the user has been banned")),
    });
    const r = await api.post("/api/user/login", { username: "a", password: "b" });
    expect(navigated).toEqual([]);
    expect(r.message).toBe("The username or password is wrong, or the user has been banned");
  });

  test("an API route this server does not have (404 'not found') says so instead of a bare 'not found'", async () => {
    fm = mockFetch({
      "GET /api/user/checkin": status(404, { success: false, message: "not found" }),
      "GET /api/user/9": status(404, { success: false, message: "user not found" }),
    });
    expect((await api.get("/api/user/checkin")).message).toBe("This function is not available on this server");
    expect((await api.get("/api/user/9")).message).toBe("user not found");
  });

  test("429, 500 and 405 map to the catalogue's messages", async () => {
    fm = mockFetch({ "GET /a": status(429), "GET /b": status(500), "GET /c": status(405) });
    expect((await api.get("/a")).message).toBe("Too many requests, please try again later");
    expect((await api.get("/b")).message).toBe("Internal server error, please contact the administrator");
    expect((await api.get("/c")).message).toBe("This site is for demonstration only, there is no backend");
  });

  test("a 429 that says when to retry (a locked account) shows the server's message", async () => {
    const locked =
      "too many failed sign-in attempts for this account; try again in 15 minutes (at 2030-01-01T00:15:00.000Z)";
    const original = globalThis.fetch;
    globalThis.fetch = (async () =>
      Response.json(
        { success: false, message: locked },
        { status: 429, headers: { "Retry-After": "900" } },
      )) as unknown as typeof fetch;
    try {
      expect(await api.post("/api/user/login", { username: "a", password: "b" })).toMatchObject({
        success: false,
        status: 429,
        message: locked,
      });
    } finally {
      globalThis.fetch = original;
    }
  });

  test("a transport failure reads 'unable to connect to server'", async () => {
    const original = globalThis.fetch;
    globalThis.fetch = (async () => {
      throw new TypeError("fetch failed");
    }) as unknown as typeof fetch;
    try {
      const r = await api.get("/api/status");
      expect(r).toMatchObject({ success: false, status: 0, message: "Unable to connect to the server" });
    } finally {
      globalThis.fetch = original;
    }
  });

  test("known server messages are translated into the current language", async () => {
    await changeLanguage("ru");
    fm = mockFetch({ "POST /api/user/manage": fail("the super admin cannot be disabled, deleted or demoted") });
    const r = await api.post("/api/user/manage", { id: 1, action: "disable" });
    expect(r.message).toBe("Суперадминистратора нельзя отключить, удалить или понизить");
    fm.on("POST /api/user/manage", fail("some new message"));
    expect((await api.post("/api/user/manage", {})).message).toBe("some new message");
  });
});

describe("saving options", () => {
  test("only changed keys are sent, one PUT per key", async () => {
    fm = mockFetch({ "PUT /api/option/": ok() });
    const r = await saveOptions({ A: "1", B: "x", C: "true" }, { A: "1", B: "y", C: "false" });
    expect(fm.calls.map((c) => c.body)).toEqual([
      { key: "B", value: "y" },
      { key: "C", value: "false" },
    ]);
    expect(r).toEqual({ saved: ["B", "C"], failed: [], unchanged: false });
  });

  test("nothing changed sends nothing", async () => {
    fm = mockFetch({ "PUT /api/option/": ok() });
    const r = await saveOptions({ A: "1" }, { A: "1" });
    expect(r.unchanged).toBe(true);
    expect(fm.calls).toHaveLength(0);
  });

  test("a partial failure reports which keys failed", async () => {
    fm = mockFetch({ "PUT /api/option/": (c: Call) => (c.body.key === "B" ? fail("bad value") : ok()) });
    const r = await saveOptions({}, { A: "1", B: "2" });
    expect(r.saved).toEqual(["A"]);
    expect(r.failed).toEqual([{ key: "B", message: "bad value" }]);
  });
});
