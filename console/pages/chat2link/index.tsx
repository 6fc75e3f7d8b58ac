// /chat2link: builds a link from a chat link, the first enabled token and the server address, then goes
// there (spec 001 §2, §8). ?id= picks the chat link by index (default the first).
import { useEffect } from "react";
import { useSearchParams } from "react-router-dom";
import { Result, Spin, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { buildChatLink, serverAddress, siteChatLinks, useEnabledTokenKey } from "../_shared/chat.ts";
import { useApp } from "../../lib/app-state.tsx";

export default function Chat2LinkPage() {
  const { t } = useTranslation();
  const [params] = useSearchParams();
  const { status } = useApp();
  const links = siteChatLinks(status);
  const index = Number(params.get("id") ?? 0);
  const link = Number.isInteger(index) && index >= 0 ? links[index] : undefined;
  if (links.length === 0) return <Result status="warning" title={t("ops.chat.noLinks")} />;
  if (!link) return <Result status="error" title={t("ops.chat.configError")} />;
  return <Redirector template={link.url} />;
}

function Redirector({ template }: { template: string }) {
  const { t } = useTranslation();
  const { status } = useApp();
  const { key, loading } = useEnabledTokenKey();
  const target = key ? buildChatLink(template, key, serverAddress(status)) : "";
  useEffect(() => {
    if (target) globalThis.location?.assign(target);
  }, [target]);
  if (loading)
    return (
      <div style={{ padding: 48, textAlign: "center" }}>
        <Spin />
      </div>
    );
  if (!key) return <Result status="warning" title={t("ops.chat.noToken")} />;
  return (
    <Result
      status="success"
      title={t("ops.chat.redirecting")}
      subTitle={
        <Typography.Text copyable={{ text: target }}>
          <a href={target} data-testid="chat-link">
            {t("ops.chat.openManually")}
          </a>
        </Typography.Text>
      }
    />
  );
}
