// Chat-client links (spec 001 §2, §8): the admin configures links as {name: url} objects with the
// placeholders {key} (the user's sk- token) and {address} (the server address, URL-encoded).
import { useEffect, useState } from "react";
import { useLocation, useNavigate } from "react-router-dom";
import { Message } from "@arco-design/web-react";
import { api } from "../../api/index.ts";
import { t } from "../../i18n/index.ts";
import { getStoredStatus, readJson, KEYS, type SiteStatus } from "../../lib/storage.ts";
import { useApp } from "../../lib/app-state.tsx";
import { TOKEN_STATUS } from "../../../server/catalogue/index.ts";

export interface ChatLink {
  name: string;
  url: string;
}

/** Flattens the stored Chats list ([{name: url}, ...]) into name/url pairs, skipping malformed entries. */
export function chatLinks(raw: unknown = readJson<unknown>(KEYS.chats, [])): ChatLink[] {
  if (!Array.isArray(raw)) return [];
  const out: ChatLink[] = [];
  for (const entry of raw) {
    if (!entry || typeof entry !== "object") continue;
    for (const [name, url] of Object.entries(entry as Record<string, unknown>)) {
      if (typeof url === "string" && url) out.push({ name, url });
    }
  }
  return out;
}

/** The chat links of the loaded status object, else the locally stored copy. */
export function siteChatLinks(status: SiteStatus): ChatLink[] {
  return chatLinks(Array.isArray(status.chats) ? status.chats : readJson<unknown>(KEYS.chats, []));
}

export function serverAddress(status: SiteStatus = getStoredStatus()): string {
  const configured = status.server_address;
  return (typeof configured === "string" && configured ? configured : (globalThis.location?.origin ?? "")).replace(
    /\/+$/,
    "",
  );
}

/** Fills a chat link template with a token key (with its sk- prefix) and the server address. */
export function buildChatLink(template: string, key: string, address = serverAddress()): string {
  const fullKey = key.startsWith("sk-") ? key : `sk-${key}`;
  return template.replaceAll("{address}", encodeURIComponent(address)).replaceAll("{key}", fullKey);
}

/**
 * Loads the first enabled token's key (from the first 100 tokens); with none, says so and goes to /token
 * after 1.5 s. A guest has no tokens: they go to the login page instead of being told their login expired.
 */
export function useEnabledTokenKey(): { key: string | null; loading: boolean } {
  const navigate = useNavigate();
  const { pathname, search } = useLocation();
  const { user } = useApp();
  const [state, setState] = useState<{ key: string | null; loading: boolean }>({ key: null, loading: true });
  useEffect(() => {
    if (!user) {
      navigate("/login", { replace: true, state: { from: pathname + search } });
      return;
    }
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    void (async () => {
      const r = await api.get(`/api/token/?p=1&size=100`);
      if (cancelled) return;
      const items: Array<{ key: string; status: number }> = Array.isArray(r.data) ? r.data : (r.data?.items ?? []);
      const enabled = items.find((x) => x.status === TOKEN_STATUS.enabled);
      if (!r.success) Message.error(r.message);
      else if (!enabled) {
        Message.error(t("ops.chat.noToken"));
        timer = setTimeout(() => navigate("/token"), 1500);
      }
      setState({ key: enabled?.key ?? null, loading: false });
    })();
    return () => {
      cancelled = true;
      if (timer) clearTimeout(timer);
    };
  }, [navigate, user?.id]);
  return state;
}
