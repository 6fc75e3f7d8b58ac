/*
 * The console: the routes of console/routes.ts (spec 000 §2.1, 001 §2) behind their guards, in the shell.
 *
 * Extension points for the operations screens:
 *  - Each route of console/routes.ts lazy-imports `console/pages/<name>/index.tsx` (default export = the
 *    page component). Replace those files; the route, its access level and its sidebar item are already
 *    wired. /channel/add and /channel/edit/:id share `pages/channel-edit/`.
 *  - Strings of those pages go in `console/i18n/ops.{zh,en,ru}.ts`; they are merged into the same
 *    i18next resources, so `useTranslation().t("ops.key")` works everywhere.
 *  - Shared helpers: `console/api` (api.get/post/put/del, qs), `console/lib/format.ts` (renderQuota,
 *    renderNumber, timestampToString, ratioColor), `console/lib/clipboard.ts` (copyText) with
 *    `console/components/copy.tsx` (copyWithFallback: the manual-copy dialog), `console/lib/storage.ts` (local
 *    storage keys, getPageSize/setPageSize), `console/lib/app-state.tsx` (useApp: status, user, theme).
 *  - Layout: pages render inside the shell (top bar, sidebar, footer); `Page` from
 *    `console/components/Page.tsx` gives the standard title + card frame.
 */
import type React from "react";
import { Suspense, lazy, useEffect } from "react";
import { Navigate, Route, Routes, useLocation, useNavigate } from "react-router-dom";
import { ConfigProvider, Spin } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { AppStateProvider, isAdmin, useApp } from "./lib/app-state.tsx";
import { setNavigator } from "./api/index.ts";
import { arcoLocale } from "./i18n/index.ts";
import { Shell } from "./layout/Shell.tsx";
import type { SiteStatus } from "./lib/storage.ts";
import { ROUTE_TABLE, type Access, type RouteEntry } from "./routes.ts";

type LazyPage = React.LazyExoticComponent<React.ComponentType<any>> & { preload: () => Promise<unknown> };
interface RouteDef {
  path: string;
  access: Access;
  page: LazyPage;
}

/** One lazy component per page module (routes sharing a module share the component). */
const pages = new Map<RouteEntry["load"], LazyPage>();
const page = (load: RouteEntry["load"]): LazyPage => {
  if (!pages.has(load)) pages.set(load, Object.assign(lazy(load), { preload: load }));
  return pages.get(load)!;
};

export const ROUTES: RouteDef[] = ROUTE_TABLE.map((r) => ({ path: r.path, access: r.access, page: page(r.load) }));
const NotFound = page(ROUTE_TABLE.find((r) => r.path === "*")!.load);

/** Guests go to /login; logged-in non-admins see the not-found page for admin routes. */
function Guard({ access, children }: { access: Access; children: React.ReactNode }) {
  const { user } = useApp();
  const location = useLocation();
  if (access === "guest") return <>{children}</>;
  if (!user) return <Navigate to="/login" replace state={{ from: location.pathname + location.search }} />;
  if (access === "admin" && !isAdmin(user))
    return (
      <Suspense fallback={<Loading />}>
        <NotFound />
      </Suspense>
    );
  return <>{children}</>;
}

/** Until the status says setup is done, every path other than /setup goes to /setup. */
function SetupRedirect({ children }: { children: React.ReactNode }) {
  const { status, statusLoaded } = useApp();
  const { pathname } = useLocation();
  // Until the first status arrives, a site not known to be set up renders nothing that calls the API.
  if (!statusLoaded && status.setup !== true) return <Loading />;
  if (statusLoaded && status.setup === false && pathname !== "/setup") return <Navigate to="/setup" replace />;
  return <>{children}</>;
}

export function Loading() {
  return (
    <div style={{ display: "flex", justifyContent: "center", padding: 48 }}>
      <Spin size={32} />
    </div>
  );
}

function NavigatorBridge() {
  const navigate = useNavigate();
  useEffect(() => setNavigator((to) => navigate(to)), [navigate]);
  return null;
}

function LocalisedRoutes() {
  const { i18n } = useTranslation();
  return (
    <ConfigProvider locale={arcoLocale(i18n.language)}>
      <NavigatorBridge />
      <SetupRedirect>
        <Shell>
          <Suspense fallback={<Loading />}>
            <Routes>
              {ROUTES.map(({ path, access, page: Page }) => (
                <Route
                  key={path}
                  path={path}
                  element={
                    <Guard access={access}>
                      <Page />
                    </Guard>
                  }
                />
              ))}
            </Routes>
          </Suspense>
        </Shell>
      </SetupRedirect>
    </ConfigProvider>
  );
}

/** The whole console; the router is supplied by main.tsx (BrowserRouter) or a test (MemoryRouter). */
export default function App({ initialStatus }: { initialStatus?: SiteStatus }) {
  return (
    <AppStateProvider initialStatus={initialStatus}>
      <LocalisedRoutes />
    </AppStateProvider>
  );
}
