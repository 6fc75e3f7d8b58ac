// Home (spec 000 §2.1): the admin's HomePageContent (Markdown, HTML or a URL in an iframe); without it,
// a short introduction with the notice and the system facts.
import { useEffect, useState } from "react";
import { Alert, Button, Card, Descriptions, Space, Spin, Typography } from "@arco-design/web-react";
import { useNavigate } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { RichContent } from "../../components/RichContent.tsx";
import { renderMarkdown } from "../../lib/markdown.ts";
import { timestampToString } from "../../lib/format.ts";

export default function HomePage() {
  const { t } = useTranslation();
  const { status, user } = useApp();
  const navigate = useNavigate();
  const [content, setContent] = useState<string | null>(null);
  const [notice, setNotice] = useState("");

  useEffect(() => {
    void api.get<string>("/api/home_page_content").then((r) => setContent(r.success ? (r.data ?? "") : ""));
    void api.get<string>("/api/notice").then((r) => r.success && setNotice(r.data ?? ""));
  }, []);

  if (content === null) return <Spin style={{ display: "block", margin: 48 }} />;
  return (
    <div className="sy-home">
      {notice && (
        <Alert
          type="info"
          closable
          style={{ marginBottom: 16 }}
          content={<div dangerouslySetInnerHTML={{ __html: renderMarkdown(notice) }} />}
        />
      )}
      {content.trim() ? (
        <RichContent content={content} title={t("nav.home")} />
      ) : (
        <Space direction="vertical" size="large" style={{ width: "100%" }}>
          <Card bordered={false} className="sy-hero">
            <Typography.Title heading={3}>
              {t("home.welcome", { name: status.system_name || "Switchyard" })}
            </Typography.Title>
            <Typography.Paragraph>{t("home.tagline")}</Typography.Paragraph>
            <Space>
              <Button type="primary" onClick={() => navigate(user ? "/token" : "/login")}>
                {t("home.getStarted")}
              </Button>
              <Button onClick={() => navigate("/pricing")}>{t("nav.pricing")}</Button>
            </Space>
          </Card>
          <Card title={t("home.systemInfo")} bordered={false}>
            <Descriptions
              column={1}
              data={[
                { label: t("home.name"), value: status.system_name || "Switchyard" },
                { label: t("home.version"), value: status.version || "-" },
                {
                  label: t("home.startTime"),
                  value: status.start_time ? timestampToString(Number(status.start_time)) : "-",
                },
              ]}
            />
          </Card>
        </Space>
      )}
    </div>
  );
}
