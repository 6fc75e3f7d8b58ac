// The frame around every screen: top bar, optional sidebar, content and footer (spec 000 §2.2). Plain
// elements and CSS (styles.css) rather than Arco's Layout, whose resizable Sider would add a resize
// widget to every page's first download. On a phone the sidebar is a drawer the top bar's menu button
// opens, instead of a 60-px rail eating a sixth of the screen.
import type React from "react";
import { useEffect, useState } from "react";
import { useLocation } from "react-router-dom";
import { TopBar } from "./TopBar.tsx";
import { Sidebar } from "./Sidebar.tsx";
import { Footer } from "./Footer.tsx";
import { useIsMobile } from "../lib/hooks.ts";

/** Screens as tall as the window (their own scrolling inside, no footer below): the playground. */
export const fullHeight = (pathname: string) => pathname === "/playground";

/** The sidebar is hidden on the home, chat and setup paths. */
export function sidebarHidden(pathname: string): boolean {
  return pathname === "/" || pathname === "/setup" || pathname.startsWith("/chat") || pathname === "/chat2link";
}

export function Shell({ children }: { children: React.ReactNode }) {
  const { pathname } = useLocation();
  const mobile = useIsMobile();
  const withSidebar = !sidebarHidden(pathname);
  const [drawerOpen, setDrawerOpen] = useState(false);
  // Following a link closes the drawer, as does growing past the phone width.
  useEffect(() => setDrawerOpen(false), [pathname, mobile]);
  return (
    <div className="sy-shell">
      <header className="sy-header">
        <TopBar onMenu={withSidebar && mobile ? () => setDrawerOpen((o) => !o) : undefined} />
      </header>
      <div className="sy-body">
        {withSidebar && <Sidebar mobile={mobile} open={drawerOpen} onClose={() => setDrawerOpen(false)} />}
        <div className={`sy-main${fullHeight(pathname) ? " sy-main-fill" : ""}`}>
          <main className="sy-content">{children}</main>
          {!fullHeight(pathname) && (
            <footer>
              <Footer />
            </footer>
          )}
        </div>
      </div>
    </div>
  );
}
