/*
 * The console's route table (spec 000 §2.1, 001 §2), read as one list.
 *
 * Extension points for the operations screens (issue 8):
 *  - Each operations route below lazy-imports `console/pages/<name>/index.tsx` (default export = the
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
import React, { Suspense, lazy, useEffect } from "react";
import { Navigate, Route, Routes, matchPath, useLocation, useNavigate } from "react-router-dom";
import { ConfigProvider, Spin } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { AppStateProvider, isAdmin, useApp } from "./lib/app-state.tsx";
import { setNavigator } from "./api/index.ts";
import { arcoLocale } from "./i18n/index.ts";
import { Shell } from "./layout/Shell.tsx";
import type { SiteStatus } from "./lib/storage.ts";

type Access = "guest" | "login" | "admin";
type LazyPage = React.LazyExoticComponent<React.ComponentType<any>> & { preload: () => Promise<unknown> };
interface RouteDef { path: string; access: Access; page: LazyPage }

const page = (load: () => Promise<{ default: React.ComponentType<any> }>): LazyPage => Object.assign(lazy(load), { preload: load });

const Home = page(() => import("./pages/home/index.tsx"));
const Setup = page(() => import("./pages/setup/index.tsx"));
const Login = page(() => import("./pages/login/index.tsx"));
const Register = page(() => import("./pages/register/index.tsx"));
const ResetRequest = page(() => import("./pages/reset/index.tsx"));
const ResetConfirm = page(() => import("./pages/user-reset/index.tsx"));
const OAuthCallback = page(() => import("./pages/oauth/index.tsx"));
const Setting = page(() => import("./pages/setting/index.tsx"));
const Personal = page(() => import("./pages/personal/index.tsx"));
const Users = page(() => import("./pages/user/index.tsx"));
const About = page(() => import("./pages/about/index.tsx"));
const NotFound = page(() => import("./pages/not-found/index.tsx"));
// Operations screens (issue 8).
const Token = page(() => import("./pages/token/index.tsx"));
const TopUp = page(() => import("./pages/topup/index.tsx"));
const Log = page(() => import("./pages/log/index.tsx"));
const Detail = page(() => import("./pages/detail/index.tsx"));
const Midjourney = page(() => import("./pages/midjourney/index.tsx"));
const Task = page(() => import("./pages/task/index.tsx"));
const Playground = page(() => import("./pages/playground/index.tsx"));
const Redemption = page(() => import("./pages/redemption/index.tsx"));
const Channel = page(() => import("./pages/channel/index.tsx"));
const ChannelEdit = page(() => import("./pages/channel-edit/index.tsx"));
const Pricing = page(() => import("./pages/pricing/index.tsx"));
const Chat = page(() => import("./pages/chat/index.tsx"));
const Chat2Link = page(() => import("./pages/chat2link/index.tsx"));

export const ROUTES: RouteDef[] = [
  { path: "/", access: "guest", page: Home },
  { path: "/setup", access: "guest", page: Setup },
  { path: "/login", access: "guest", page: Login },
  { path: "/register", access: "guest", page: Register },
  { path: "/reset", access: "guest", page: ResetRequest },
  { path: "/user/reset", access: "guest", page: ResetConfirm },
  { path: "/oauth/github", access: "guest", page: OAuthCallback },
  { path: "/oauth/oidc", access: "guest", page: OAuthCallback },
  { path: "/oauth/linuxdo", access: "guest", page: OAuthCallback },
  { path: "/token", access: "login", page: Token },
  { path: "/setting", access: "admin", page: Setting },
  { path: "/personal", access: "login", page: Personal },
  { path: "/topup", access: "login", page: TopUp },
  { path: "/log", access: "login", page: Log },
  { path: "/detail", access: "login", page: Detail },
  { path: "/midjourney", access: "login", page: Midjourney },
  { path: "/task", access: "login", page: Task },
  { path: "/playground", access: "login", page: Playground },
  { path: "/redemption", access: "admin", page: Redemption },
  { path: "/channel", access: "admin", page: Channel },
  { path: "/channel/edit/:id", access: "admin", page: ChannelEdit },
  { path: "/channel/add", access: "admin", page: ChannelEdit },
  { path: "/user", access: "admin", page: Users },
  { path: "/user/edit/:id", access: "admin", page: Users },
  { path: "/user/edit", access: "admin", page: Users },
  { path: "/pricing", access: "guest", page: Pricing },
  { path: "/about", access: "guest", page: About },
  { path: "/chat/:id?", access: "guest", page: Chat },
  { path: "/chat2link", access: "guest", page: Chat2Link },
  { path: "*", access: "guest", page: NotFound },
];

/**
 * Starts downloading the page of `pathname` at once (main.tsx, before the first render), so its chunk
 * arrives while the status call is under way instead of after it.
 */
export function preloadRoute(pathname: string): void {
  const route = ROUTES.find((r) => matchPath(r.path, pathname));
  void route?.page.preload().catch(() => {});
}

/** Guests go to /login; logged-in non-admins see the not-found page for admin routes. */
function Guard({ access, children }: { access: Access; children: React.ReactNode }) {
  const { user } = useApp();
  const location = useLocation();
  if (access === "guest") return <>{children}</>;
  if (!user) return <Navigate to="/login" replace state={{ from: location.pathname + location.search }} />;
  if (access === "admin" && !isAdmin(user)) return <Suspense fallback={<Loading />}><NotFound /></Suspense>;
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
                <Route key={path} path={path} element={<Guard access={access}><Page /></Guard>} />
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
