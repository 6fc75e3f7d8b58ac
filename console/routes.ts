// The console's route table (spec 000 §2.1, 001 §2), read as one list: path, who may open it, and the
// page's module, loaded on demand. Kept free of the rest of the console (translations, state, Arco) so
// that console/preload.ts can start downloading the opened page before any of it has loaded.
import type React from "react";
import { matchPath } from "react-router-dom";

export type Access = "guest" | "login" | "admin";
export interface RouteEntry {
  path: string;
  access: Access;
  load: () => Promise<{ default: React.ComponentType<any> }>;
}

// One loader per page module: routes that share a module (/user and /user/edit/:id) share one page.
const home = () => import("./pages/home/index.tsx");
const setup = () => import("./pages/setup/index.tsx");
const login = () => import("./pages/login/index.tsx");
const register = () => import("./pages/register/index.tsx");
const reset = () => import("./pages/reset/index.tsx");
const userReset = () => import("./pages/user-reset/index.tsx");
const oauth = () => import("./pages/oauth/index.tsx");
const token = () => import("./pages/token/index.tsx");
const setting = () => import("./pages/setting/index.tsx");
const personal = () => import("./pages/personal/index.tsx");
const topup = () => import("./pages/topup/index.tsx");
const log = () => import("./pages/log/index.tsx");
const detail = () => import("./pages/detail/index.tsx");
const midjourney = () => import("./pages/midjourney/index.tsx");
const task = () => import("./pages/task/index.tsx");
const playground = () => import("./pages/playground/index.tsx");
const redemption = () => import("./pages/redemption/index.tsx");
const channel = () => import("./pages/channel/index.tsx");
const channelEdit = () => import("./pages/channel-edit/index.tsx");
const user = () => import("./pages/user/index.tsx");
const pricing = () => import("./pages/pricing/index.tsx");
const about = () => import("./pages/about/index.tsx");
const chat = () => import("./pages/chat/index.tsx");
const chat2link = () => import("./pages/chat2link/index.tsx");
const notFound = () => import("./pages/not-found/index.tsx");

export const ROUTE_TABLE: RouteEntry[] = [
  { path: "/", access: "guest", load: home },
  { path: "/setup", access: "guest", load: setup },
  { path: "/login", access: "guest", load: login },
  { path: "/register", access: "guest", load: register },
  { path: "/reset", access: "guest", load: reset },
  { path: "/user/reset", access: "guest", load: userReset },
  { path: "/oauth/github", access: "guest", load: oauth },
  { path: "/oauth/oidc", access: "guest", load: oauth },
  { path: "/oauth/linuxdo", access: "guest", load: oauth },
  { path: "/token", access: "login", load: token },
  { path: "/setting", access: "admin", load: setting },
  { path: "/personal", access: "login", load: personal },
  { path: "/topup", access: "login", load: topup },
  { path: "/log", access: "login", load: log },
  { path: "/detail", access: "login", load: detail },
  { path: "/midjourney", access: "login", load: midjourney },
  { path: "/task", access: "login", load: task },
  { path: "/playground", access: "login", load: playground },
  { path: "/redemption", access: "admin", load: redemption },
  { path: "/channel", access: "admin", load: channel },
  { path: "/channel/edit/:id", access: "admin", load: channelEdit },
  { path: "/channel/add", access: "admin", load: channelEdit },
  { path: "/user", access: "admin", load: user },
  { path: "/user/edit/:id", access: "admin", load: user },
  { path: "/user/edit", access: "admin", load: user },
  { path: "/pricing", access: "guest", load: pricing },
  { path: "/about", access: "guest", load: about },
  { path: "/chat/:id?", access: "guest", load: chat },
  { path: "/chat2link", access: "guest", load: chat2link },
  { path: "*", access: "guest", load: notFound },
];

/** The route a path opens (the last entry, "*", catches the rest). */
export function routeOf(pathname: string): RouteEntry | undefined {
  return ROUTE_TABLE.find((r) => matchPath(r.path, pathname));
}
