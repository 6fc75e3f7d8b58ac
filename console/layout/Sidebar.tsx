// Sidebar (spec 000 §2.2, 001 §2): items by role and site flags; collapse state remembered, initially
// from default_collapse_sidebar; 60 px collapsed, 200 px expanded.
import type React from "react";
import { useState } from "react";
import { Menu } from "@arco-design/web-react";
import {
  IconApps,
  IconBook,
  IconCommand,
  IconDashboard,
  IconFile,
  IconImage,
  IconMenuFold,
  IconMenuUnfold,
  IconMessage,
  IconPalette,
  IconSettings,
  IconStorage,
  IconTag,
  IconUser,
  IconUserGroup,
  IconWechatpay,
} from "@arco-design/web-react/icon";
import { useLocation, useNavigate } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { isAdmin, useApp } from "../lib/app-state.tsx";
import { KEYS, readBool, readJson, readString, writeString } from "../lib/storage.ts";
import { SIDEBAR_WIDTH } from "../../server/catalogue/index.ts";

/** The user's own toggle wins over the site default once they have used it. */
const COLLAPSED_KEY = "sidebar-collapsed";

export function initialCollapsed(): boolean {
  const own = readString(COLLAPSED_KEY);
  if (own !== null) return own === "true";
  return readBool(KEYS.defaultCollapseSidebar, false);
}

export interface SideItem {
  key: string;
  label: string;
  icon: React.ReactNode;
  children?: SideItem[];
}
export interface SideSection {
  key: string;
  label: string;
  items: SideItem[];
}

export function sidebarSections(opts: {
  t: (k: string) => string;
  admin: boolean;
  chats: Array<Record<string, string>>;
  dataExport: boolean;
  drawing: boolean;
  task: boolean;
}): SideSection[] {
  const { t } = opts;
  const chatItems: SideItem[] = opts.chats.map((c, i) => ({
    key: `/chat/${i}`,
    label: Object.keys(c)[0] ?? `${t("side.chat")} ${i + 1}`,
    icon: <IconMessage />,
  }));
  const sections: SideSection[] = [
    {
      key: "chat",
      label: t("side.chatSection"),
      items: [
        { key: "/playground", label: t("side.playground"), icon: <IconCommand /> },
        { key: "chat", label: t("side.chat"), icon: <IconMessage />, children: chatItems },
      ],
    },
    {
      key: "console",
      label: t("side.consoleSection"),
      items: [
        ...(opts.dataExport ? [{ key: "/detail", label: t("side.dashboard"), icon: <IconDashboard /> }] : []),
        { key: "/token", label: t("side.tokens"), icon: <IconApps /> },
        { key: "/log", label: t("side.logs"), icon: <IconFile /> },
        ...(opts.drawing ? [{ key: "/midjourney", label: t("side.drawing"), icon: <IconImage /> }] : []),
        ...(opts.task ? [{ key: "/task", label: t("side.tasks"), icon: <IconPalette /> }] : []),
      ],
    },
  ];
  if (opts.admin) {
    sections.push({
      key: "admin",
      label: t("side.adminSection"),
      items: [
        { key: "/channel", label: t("side.channels"), icon: <IconStorage /> },
        { key: "/redemption", label: t("side.redemption"), icon: <IconTag /> },
        { key: "/user", label: t("side.users"), icon: <IconUserGroup /> },
        { key: "/setting", label: t("side.settings"), icon: <IconSettings /> },
      ],
    });
  }
  sections.push({
    key: "personal",
    label: t("side.personalSection"),
    items: [
      { key: "/topup", label: t("side.wallet"), icon: <IconWechatpay /> },
      { key: "/personal", label: t("side.personal"), icon: <IconUser /> },
    ],
  });
  return sections;
}

/** The item a path belongs to: add and edit pages light up their list. /user/reset is a guest page. */
export function selectedKey(pathname: string): string {
  if (pathname.startsWith("/channel")) return "/channel";
  if (pathname.startsWith("/user/edit")) return "/user";
  return pathname;
}

/**
 * Desktop: a column of 200 px, 60 px collapsed (the toggle at its foot). Phone (`mobile`): a drawer over
 * the page, open while `open`, closed by the mask, a link or the Escape key.
 */
export function Sidebar({ mobile, open = false, onClose }: { mobile: boolean; open?: boolean; onClose?: () => void }) {
  const { t } = useTranslation();
  const { user, status } = useApp();
  const navigate = useNavigate();
  const { pathname } = useLocation();
  const [ownCollapsed, setCollapsed] = useState(() => initialCollapsed());
  // The drawer always shows the labels: collapsing is for the desktop column.
  const collapsed = !mobile && ownCollapsed;
  const chats = Array.isArray(status.chats) ? status.chats : readJson<Array<Record<string, string>>>(KEYS.chats, []);
  const sections = sidebarSections({
    t,
    admin: isAdmin(user),
    chats,
    dataExport: status.enable_data_export ?? readBool(KEYS.enableDataExport),
    drawing: status.enable_drawing ?? readBool(KEYS.enableDrawing),
    task: status.enable_task ?? readBool(KEYS.enableTask),
  });
  const toggle = () => {
    setCollapsed(!collapsed);
    writeString(COLLAPSED_KEY, String(!collapsed));
  };
  const selected = selectedKey(pathname);
  const width = collapsed ? SIDEBAR_WIDTH.collapsed : SIDEBAR_WIDTH.expanded;
  return (
    <>
      {mobile && open && <div className="sy-sider-mask" data-testid="sider-mask" onClick={onClose} />}
      <aside
        className={`sy-sider${mobile ? " sy-sider-drawer" : ""}${collapsed ? " sy-sider-collapsed" : ""}`}
        data-open={mobile ? String(open) : undefined}
        aria-hidden={mobile && !open ? true : undefined}
        style={mobile ? undefined : { width }}
        onKeyDown={(e) => {
          if (e.key === "Escape") onClose?.();
        }}
      >
        <Menu
          selectedKeys={[selected]}
          onClickMenuItem={(key) => navigate(key)}
          collapse={collapsed}
          defaultOpenKeys={["chat"]}
          className="sy-side-menu"
        >
          {sections.map((s) => (
            <Menu.ItemGroup key={s.key} title={collapsed ? "" : s.label}>
              {s.items.map((item) =>
                item.children ? (
                  <Menu.SubMenu
                    key={item.key}
                    title={
                      <span>
                        {item.icon}
                        <span className="sy-side-label">{item.label}</span>
                      </span>
                    }
                  >
                    {item.children.length === 0 ? (
                      <Menu.Item key="/chat" disabled>
                        {t("side.noChats")}
                      </Menu.Item>
                    ) : (
                      item.children.map((c) => (
                        <Menu.Item key={c.key}>
                          <span className="sy-side-label">{c.label}</span>
                        </Menu.Item>
                      ))
                    )}
                  </Menu.SubMenu>
                ) : (
                  <Menu.Item key={item.key}>
                    {item.icon}
                    <span className="sy-side-label">{item.label}</span>
                  </Menu.Item>
                ),
              )}
            </Menu.ItemGroup>
          ))}
        </Menu>
        <div className="sy-sider-foot">
          {!collapsed && (
            <span className="sy-sider-docs">
              <IconBook /> {t("side.version", { version: status.version ?? "" })}
            </span>
          )}
          {!mobile && (
            <button
              type="button"
              className="sy-sider-toggle"
              data-testid="sider-toggle"
              onClick={toggle}
              aria-label={collapsed ? t("side.expand") : t("side.collapse")}
            >
              {collapsed ? <IconMenuUnfold /> : <IconMenuFold />}
            </button>
          )}
        </div>
      </aside>
    </>
  );
}
