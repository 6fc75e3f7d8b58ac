// Imported first by main.tsx: starts downloading the opened page's module (and the usage log's first page
// of data) before the rest of the console (its translations above all, which are awaited before the first
// render) has loaded.
import { routeOf } from "./routes.ts";
import { prefetchFirstLogPage } from "./pages/log/prefetch.ts";

const route = routeOf(location.pathname);
void route?.load().catch(() => {});
// The usage log's first rows too: the page opens on them instead of asking after its first render.
if (route?.path === "/log") prefetchFirstLogPage();
