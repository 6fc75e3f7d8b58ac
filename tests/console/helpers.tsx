// Component-test helpers: a scripted fetch that records every call, and the whole console rendered in
// a MemoryRouter with a given status object and logged-in user.
import type React from "react";
import { expect, setDefaultTimeout } from "bun:test";
import { cleanup, configure, render, waitFor, type RenderResult } from "@testing-library/react";
import { MemoryRouter, useLocation, useNavigate } from "react-router-dom";
import { Message } from "@arco-design/web-react";
import App from "../../console/App.tsx";
import { changeLanguage, type Language } from "../../console/i18n/index.ts";
import type { SiteStatus, StoredUser } from "../../console/lib/storage.ts";
import { OPTION_DEFAULTS, SECRET_OPTIONS } from "../../server/modules/option/defaults.ts";

// The machine is shared with other jobs; lazy pages and Arco animations can take over a second there.
configure({ asyncUtilTimeout: 4000 });
setDefaultTimeout(20_000);

export interface Call {
  method: string;
  path: string;
  query: URLSearchParams;
  body: any;
  headers: Record<string, string>;
}
type Handler = (call: Call) => unknown | Response | Promise<unknown | Response>;

export interface FetchMock {
  calls: Call[];
  restore: () => void;
  on: (route: string, h: Handler | unknown) => void;
}

/** Routes are "METHOD /path" (query ignored). Unknown routes answer {success:false}. Envelopes are sent as they are, other values as {success:true,data}. */
export function mockFetch(routes: Record<string, Handler | unknown> = {}): FetchMock {
  const original = globalThis.fetch;
  const table = new Map<string, Handler>();
  const isEnvelope = (v: unknown) => !!v && typeof v === "object" && "success" in (v as object);
  const on = (route: string, h: Handler | unknown) =>
    table.set(
      route,
      typeof h === "function" ? (h as Handler) : () => (isEnvelope(h) ? h : { success: true, message: "", data: h }),
    );
  for (const [k, v] of Object.entries(routes)) on(k, v);
  const calls: Call[] = [];
  globalThis.fetch = (async (input: any, init: any = {}) => {
    const url = new URL(typeof input === "string" ? input : input.url, "http://localhost:3000");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries((init.headers ?? {}) as Record<string, string>)) headers[k.toLowerCase()] = v;
    const call: Call = {
      method: (init.method ?? "GET").toUpperCase(),
      path: url.pathname,
      query: url.searchParams,
      body: init.body ? JSON.parse(init.body) : undefined,
      headers,
    };
    calls.push(call);
    const h = table.get(`${call.method} ${call.path}`);
    const out = h ? await h(call) : { success: false, message: `no mock for ${call.method} ${call.path}` };
    if (out instanceof Response) return out;
    return new Response(JSON.stringify(out), { status: 200, headers: { "content-type": "application/json" } });
  }) as typeof fetch;
  return { calls, restore: () => (globalThis.fetch = original), on };
}

export const ok = (data?: unknown, message = "") => ({ success: true, message, data });

/** GET /api/option/'s list: every option's default (secrets left out), with `over` applied. */
export const optionList = (over: Record<string, string> = {}) =>
  Object.entries({ ...OPTION_DEFAULTS, ...over })
    .filter(([k]) => !SECRET_OPTIONS.has(k))
    .map(([key, value]) => ({ key, value }));
export const fail = (message: string) => ({ success: false, message });

export const ADMIN: StoredUser = {
  id: 1,
  username: "root",
  display_name: "Root User",
  role: 100,
  status: 1,
  group: "default",
  quota: 100_000_000,
};
export const USER: StoredUser = {
  id: 2,
  username: "alice",
  display_name: "Alice",
  role: 1,
  status: 1,
  group: "default",
  quota: 500_000,
};

export const BASE_STATUS: SiteStatus = {
  system_name: "Switchyard",
  version: "v0.1.0",
  start_time: 1_700_000_000,
  quota_per_unit: 500000,
  display_in_currency: true,
  enable_data_export: true,
  enable_drawing: false,
  enable_task: true,
  chats: [{ "ChatGPT Next Web": "https://example.test/#/?key={key}" }],
  setup: true,
  root_init: true,
  footer_html: "",
  self_use_mode_enabled: false,
  demo_site_enabled: false,
  register_enabled: true,
  password_login_enabled: true,
  turnstile_check: false,
  email_verification: false,
  default_collapse_sidebar: false,
};

export function Where() {
  const loc = useLocation();
  return <div data-testid="location">{loc.pathname + loc.search}</div>;
}

/** A button inside the router that navigates client-side, as a sidebar link would. */
export function GoTo({ to }: { to: string }) {
  const navigate = useNavigate();
  return <button type="button" data-testid={`goto-${to}`} onClick={() => navigate(to)}>{`go ${to}`}</button>;
}

export async function renderApp(
  path: string,
  opts: {
    status?: SiteStatus;
    user?: StoredUser | null;
    lang?: Language;
    storage?: Record<string, string>;
    extra?: React.ReactNode;
  } = {},
): Promise<RenderResult> {
  localStorage.clear();
  if (opts.user) localStorage.setItem("user", JSON.stringify(opts.user));
  for (const [k, v] of Object.entries(opts.storage ?? {})) localStorage.setItem(k, v);
  await changeLanguage(opts.lang ?? "en");
  return render(
    <MemoryRouter initialEntries={[path]}>
      <App initialStatus={{ ...BASE_STATUS, ...(opts.status ?? {}) }} />
      <Where />
      {opts.extra}
    </MemoryRouter>,
  );
}

export const location = () => document.querySelector('[data-testid="location"]')?.textContent ?? "";
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Between tests: unmount what was rendered (with its portals), no stale toasts, light theme. */
export function resetDom(): void {
  cleanup();
  Message.clear();
  document.body.removeAttribute("arco-theme");
}

/** An Arco InputNumber's <input>, whether the test id landed on the wrapper or on the input. */
export function numberInput(el: HTMLElement): HTMLInputElement {
  return (el.tagName === "INPUT" ? el : el.querySelector("input")) as HTMLInputElement;
}

/** Runs `act` with a clipboard that records what is written to it, and checks that `expected` was written. */
export async function withClipboard(act: () => unknown, expected: string): Promise<void> {
  let copied = "";
  const original = navigator.clipboard;
  Object.defineProperty(navigator, "clipboard", {
    value: {
      writeText: async (v: string) => {
        copied = v;
      },
    },
    configurable: true,
  });
  try {
    await act();
    await waitFor(() => expect(copied).toBe(expected));
  } finally {
    Object.defineProperty(navigator, "clipboard", { value: original, configurable: true });
  }
}
