// Site-wide state: the status object (loaded from /api/status and mirrored in local storage), the
// logged-in user, and the theme. Screens read it through useApp().
import type React from "react";
import { createContext, startTransition, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { Message } from "@arco-design/web-react";
import { api, onSessionExpired } from "../api/index.ts";
import { i18n } from "../i18n/index.ts";
import {
  getStoredStatus,
  getStoredUser,
  setStoredUser,
  storeStatus,
  type SiteStatus,
  type StoredUser,
} from "./storage.ts";
import { applyTheme, storedTheme, type ThemeMode } from "./theme.ts";
import { ROLE } from "../../server/catalogue/index.ts";

export interface AppState {
  status: SiteStatus;
  /** True once /api/status answered (or failed) in this page load. */
  statusLoaded: boolean;
  statusError: string | null;
  refreshStatus: () => Promise<void>;
  user: StoredUser | null;
  setUser: (u: StoredUser | null) => void;
  theme: ThemeMode;
  setTheme: (m: ThemeMode) => void;
}

const Ctx = createContext<AppState | null>(null);

type StatusReply = { success: boolean; message?: string; data?: SiteStatus };
/**
 * The status call index.html started before the scripts arrived (taken once); null when there was none
 * or it failed, and the console asks again through the API client.
 */
function takeEarlyStatus(): Promise<StatusReply | null> | null {
  const g = globalThis as { __syStatus?: Promise<StatusReply | null> };
  const p = g.__syStatus ?? null;
  g.__syStatus = undefined;
  return p;
}

export function AppStateProvider({
  children,
  initialStatus,
}: {
  children: React.ReactNode;
  initialStatus?: SiteStatus;
}) {
  const [status, setStatus] = useState<SiteStatus>(() => initialStatus ?? getStoredStatus());
  const [statusLoaded, setLoaded] = useState(!!initialStatus);
  const [statusError, setStatusError] = useState<string | null>(null);
  const [user, setUserState] = useState<StoredUser | null>(() => getStoredUser());
  const [theme, setThemeState] = useState<ThemeMode>(() => storedTheme());

  const refreshStatus = useCallback(async () => {
    const early = await takeEarlyStatus();
    const r =
      early?.success && early.data
        ? (early as { success: true; message: string; data: SiteStatus })
        : await api.get<SiteStatus>("/api/status");
    if (r.success && r.data) {
      storeStatus(r.data);
      setStatus(r.data);
      setStatusError(null);
    } else {
      setStatusError(r.message);
      Message.error(`${i18n.t("error.statusFailed")}: ${r.message}`);
    }
    setLoaded(true);
  }, []);

  useEffect(() => {
    if (!initialStatus) void refreshStatus();
  }, [initialStatus, refreshStatus]);

  useEffect(() => applyTheme(theme), [theme]);

  useEffect(() => {
    if (status.system_name) document.title = String(status.system_name);
  }, [status.system_name]);

  const setUser = useCallback((u: StoredUser | null) => {
    setStoredUser(u);
    setUserState(u);
  }, []);

  // A 401 anywhere means the session is gone: forget the user here too, so the top bar and the route
  // guards stop treating the visitor as logged in. The router navigates in a transition; clearing the
  // user in one as well renders both together, so a guard never sees "no user" on the old protected
  // path and replaces the client's /login?expired=true with a plain /login.
  useEffect(() => onSessionExpired(() => startTransition(() => setUser(null))), [setUser]);

  const value = useMemo<AppState>(
    () => ({
      status,
      statusLoaded,
      statusError,
      refreshStatus,
      user,
      setUser,
      theme,
      setTheme: setThemeState,
    }),
    [status, statusLoaded, statusError, refreshStatus, user, setUser, theme],
  );
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useApp(): AppState {
  const v = useContext(Ctx);
  if (!v) throw new Error("useApp outside AppStateProvider");
  return v;
}

export const isAdmin = (u: StoredUser | null) => !!u && u.role >= ROLE.admin;
export const isRoot = (u: StoredUser | null) => !!u && u.role >= ROLE.root;
