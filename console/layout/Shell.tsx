// The frame around every screen: top bar, optional sidebar, content and footer (spec 000 §2.2).
import React from "react";
import { Layout } from "@arco-design/web-react";
import { useLocation } from "react-router-dom";
import { TopBar } from "./TopBar.tsx";
import { Sidebar } from "./Sidebar.tsx";
import { Footer } from "./Footer.tsx";
import { useIsMobile } from "../lib/hooks.ts";

/** The sidebar is hidden on the home, chat and setup paths. */
export function sidebarHidden(pathname: string): boolean {
  return pathname === "/" || pathname === "/setup" || pathname.startsWith("/chat") || pathname === "/chat2link";
}

export function Shell({ children }: { children: React.ReactNode }) {
  const { pathname } = useLocation();
  const mobile = useIsMobile();
  const withSidebar = !sidebarHidden(pathname);
  return (
    <Layout className="sy-shell" style={{ minHeight: "100vh" }}>
      <Layout.Header className="sy-header">
        <TopBar />
      </Layout.Header>
      {/* hasSider: Arco only detects a Sider among direct children, and ours is wrapped. */}
      <Layout hasSider={withSidebar}>
        {withSidebar && <Sidebar mobile={mobile} />}
        <Layout>
          <Layout.Content className="sy-content" style={{ padding: mobile ? 8 : 16 }}>
            {children}
          </Layout.Content>
          <Layout.Footer>
            <Footer />
          </Layout.Footer>
        </Layout>
      </Layout>
    </Layout>
  );
}
