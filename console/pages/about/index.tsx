import { useEffect, useState } from "react";
import { Spin, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { Page } from "../../components/Page.tsx";
import { RichContent } from "../../components/RichContent.tsx";

export default function AboutPage() {
  const { t } = useTranslation();
  const [about, setAbout] = useState<string | null>(null);
  useEffect(() => {
    void api.get<string>("/api/about").then((r) => setAbout(r.success ? (r.data ?? "") : ""));
  }, []);
  return (
    <Page title={t("nav.about")}>
      {about === null ? (
        <Spin />
      ) : about.trim() ? (
        <RichContent content={about} title={t("nav.about")} />
      ) : (
        <Typography.Paragraph>{t("about.empty")}</Typography.Paragraph>
      )}
    </Page>
  );
}
