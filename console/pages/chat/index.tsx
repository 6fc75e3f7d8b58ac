// /chat/{id}: embeds the id-th configured chat link, filled with the user's first enabled token (spec 000 §2.1, 001 §8).
import { useParams } from "react-router-dom";
import { Result, Spin } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { buildChatLink, serverAddress, siteChatLinks, useEnabledTokenKey } from "../_shared/chat.ts";
import { useApp } from "../../lib/app-state.tsx";

export default function ChatPage() {
  const { t } = useTranslation();
  const { id } = useParams();
  const { status } = useApp();
  const links = siteChatLinks(status);
  const index = id === undefined ? 0 : Number(id);
  const link = Number.isInteger(index) && index >= 0 ? links[index] : undefined;
  if (links.length === 0) return <Result status="warning" title={t("ops.chat.noLinks")} />;
  if (!link) return <Result status="error" title={t("ops.chat.configError")} />;
  return <ChatFrame template={link.url} name={link.name} />;
}

function ChatFrame({ template, name }: { template: string; name: string }) {
  const { t } = useTranslation();
  const { status } = useApp();
  const { key, loading } = useEnabledTokenKey();
  if (loading)
    return (
      <div style={{ padding: 48, textAlign: "center" }}>
        <Spin />
      </div>
    );
  if (!key) return <Result status="warning" title={t("ops.chat.noToken")} />;
  return (
    <iframe
      src={buildChatLink(template, key, serverAddress(status))}
      title={name}
      data-testid="chat-frame"
      style={{ width: "100%", height: "calc(100vh - 64px)", border: "none", display: "block" }}
      allow="clipboard-read; clipboard-write"
    />
  );
}
