// Top navigation (spec 000 §2.2): home, console, pricing, docs (when configured), about; on the right
// the new-year item, the self-use/demo badge, theme switch, language menu and login/register or the
// avatar menu.
import { Avatar, Button, Dropdown, Menu, Message, Space, Tag } from "@arco-design/web-react";
import { IconLanguage, IconMenu, IconMoonFill, IconSunFill } from "@arco-design/web-react/icon";
import { Link, useLocation, useNavigate } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { useApp } from "../lib/app-state.tsx";
import { logoUrl } from "../lib/logo.ts";
import { api } from "../api/index.ts";
import { changeLanguage, type Language } from "../i18n/index.ts";
import { useIsMobile } from "../lib/hooks.ts";
import { isNewYearsDay } from "../lib/format.ts";

const LANGUAGE_NAMES: Record<Language, string> = { zh: "中文", en: "English", ru: "Русский" };

/** `onMenu`: on a phone, opens the sidebar drawer (absent where the page has no sidebar). */
export function TopBar({ today = new Date(), onMenu }: { today?: Date; onMenu?: () => void }) {
  const { t, i18n } = useTranslation();
  const { status, user, setUser, theme, setTheme } = useApp();
  const navigate = useNavigate();
  const { pathname } = useLocation();
  const mobile = useIsMobile();
  const logo = logoUrl(status.logo);
  const consolePath = status.enable_data_export ? "/detail" : "/token";

  const nav = [
    { key: "/", label: t("nav.home") },
    { key: consolePath, label: t("nav.console") },
    { key: "/pricing", label: t("nav.pricing") },
    ...(status.docs_link ? [{ key: "docs", label: t("nav.docs"), href: String(status.docs_link) }] : []),
    { key: "/about", label: t("nav.about") },
  ];

  const logout = async () => {
    await api.get("/api/user/logout");
    setUser(null);
    Message.success(t("auth.logoutSuccess"));
    navigate("/login");
  };

  const selected = nav.find((n) => n.key !== "/" && pathname.startsWith(n.key))?.key ?? (pathname === "/" ? "/" : "");

  // During first-run setup there is no account to sign in with yet: no login or register buttons.
  const settingUp = status.setup === false || pathname === "/setup";

  return (
    <div className="sy-topbar">
      {onMenu && (
        <Button
          type="text"
          shape="circle"
          icon={<IconMenu />}
          aria-label={t("nav.menu")}
          data-testid="menu-toggle"
          onClick={onMenu}
        />
      )}
      <Link to="/" className="sy-brand">
        <img
          src={logo}
          alt=""
          width={28}
          height={28}
          onError={(e) => ((e.target as HTMLImageElement).style.visibility = "hidden")}
        />
        {!mobile && <span className="sy-brand-name">{status.system_name || "Switchyard"}</span>}
      </Link>
      <Menu mode="horizontal" className="sy-nav" selectedKeys={[selected]} ellipsis={mobile}>
        {nav.map((n) => (
          <Menu.Item
            key={n.key}
            onClick={() => ("href" in n && n.href ? window.open(n.href, "_blank", "noopener") : navigate(n.key))}
          >
            {n.label}
          </Menu.Item>
        ))}
      </Menu>
      <Space size={mobile ? 4 : 8} className="sy-topbar-right">
        {isNewYearsDay(today) && (
          <Button type="text" data-testid="new-year" onClick={() => Message.success(t("nav.newYearGreeting"))}>
            🎉 {mobile ? "" : t("nav.newYear")}
          </Button>
        )}
        {status.self_use_mode_enabled && <Tag color="orange">{t("nav.selfUseMode")}</Tag>}
        {!status.self_use_mode_enabled && status.demo_site_enabled && <Tag color="purple">{t("nav.demoSite")}</Tag>}
        <Button
          shape="circle"
          type="text"
          aria-label={t("nav.toggleTheme")}
          data-testid="theme-toggle"
          icon={theme === "dark" ? <IconSunFill /> : <IconMoonFill />}
          onClick={() => setTheme(theme === "dark" ? "light" : "dark")}
        />
        <Dropdown
          trigger="click"
          droplist={
            <Menu onClickMenuItem={(key) => void changeLanguage(key as Language)} selectedKeys={[i18n.language]}>
              {(Object.keys(LANGUAGE_NAMES) as Language[]).map((l) => (
                <Menu.Item key={l}>{LANGUAGE_NAMES[l]}</Menu.Item>
              ))}
            </Menu>
          }
        >
          <Button type="text" aria-label={t("nav.language")} data-testid="language-menu" icon={<IconLanguage />}>
            {mobile ? "" : (LANGUAGE_NAMES[i18n.language as Language] ?? "")}
          </Button>
        </Dropdown>
        {user ? (
          <Dropdown
            trigger="click"
            droplist={
              <Menu onClickMenuItem={(key) => (key === "logout" ? void logout() : navigate("/personal"))}>
                <Menu.Item key="personal">{t("nav.personal")}</Menu.Item>
                <Menu.Item key="logout">{t("nav.logout")}</Menu.Item>
              </Menu>
            }
          >
            <Button type="text" data-testid="avatar-menu">
              <Avatar size={28} style={{ backgroundColor: "#165dff" }}>
                {(user.display_name || user.username || "?").slice(0, 1).toUpperCase()}
              </Avatar>
              {!mobile && <span style={{ marginLeft: 6 }}>{user.display_name || user.username}</span>}
            </Button>
          </Dropdown>
        ) : settingUp ? null : (
          <>
            <Button type="primary" size="small" onClick={() => navigate("/login")}>
              {t("nav.login")}
            </Button>
            {!status.self_use_mode_enabled && !mobile && (
              <Button size="small" onClick={() => navigate("/register")}>
                {t("nav.register")}
              </Button>
            )}
          </>
        )}
      </Space>
    </div>
  );
}
