// Other settings (spec 000 §2.9, §8): system info with an update check against the public release
// feed (fails gracefully offline), then notice, system name, logo, home page, about and footer, each
// saved on its own with an updated/failed message.
import { useEffect, useState } from "react";
import { Button, Card, Descriptions, Form, Input, Message, Modal, Space, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../../api/index.ts";
import { useApp } from "../../../lib/app-state.tsx";
import { timestampToString } from "../../../lib/format.ts";
import { renderMarkdown } from "../../../lib/markdown.ts";
import { useSettings } from "../context.tsx";

export const RELEASE_FEED_URL = "https://api.github.com/repos/switchyard-gateway/switchyard/releases/latest";

export type UpdateCheck =
  | { kind: "failed" }
  | { kind: "latest" }
  | { kind: "newer"; tag: string; body: string; url: string };

export async function checkForUpdate(currentVersion: string, feed = RELEASE_FEED_URL): Promise<UpdateCheck> {
  try {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 8000);
    const res = await fetch(feed, { signal: controller.signal, headers: { Accept: "application/json" } });
    clearTimeout(timer);
    if (!res.ok) return { kind: "failed" };
    const release = await res.json();
    const tag = String(release?.tag_name ?? "");
    if (!tag) return { kind: "failed" };
    const norm = (v: string) => v.replace(/^v/i, "");
    if (norm(tag) === norm(currentVersion)) return { kind: "latest" };
    return { kind: "newer", tag, body: String(release.body ?? ""), url: String(release.html_url ?? "") };
  } catch {
    return { kind: "failed" };
  }
}

function SingleOption({
  optionKey,
  label,
  multiline,
  help,
}: {
  optionKey: string;
  label: string;
  multiline?: boolean;
  help?: string;
}) {
  const { t } = useTranslation();
  const { options, commit } = useSettings();
  const [value, setValue] = useState(options[optionKey] ?? "");
  const [saving, setSaving] = useState(false);
  useEffect(() => setValue(options[optionKey] ?? ""), [options[optionKey]]);
  const save = async () => {
    if (value === (options[optionKey] ?? "")) {
      Message.warning(t("save.nothingChanged"));
      return;
    }
    setSaving(true);
    const r = await api.put("/api/option/", { key: optionKey, value });
    setSaving(false);
    if (r.success) {
      commit({ [optionKey]: value });
      Message.success(t("other.updated", { name: label }));
    } else Message.error(`${t("other.updateFailed", { name: label })}: ${r.message}`);
  };
  return (
    <Form.Item label={label}>
      <Space direction="vertical" style={{ width: "100%" }}>
        {multiline ? (
          <Input.TextArea name={optionKey} value={value} onChange={setValue} autoSize={{ minRows: 4, maxRows: 16 }} />
        ) : (
          <Input name={optionKey} value={value} onChange={setValue} />
        )}
        {help && (
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {help}
          </Typography.Text>
        )}
        <Button type="primary" loading={saving} onClick={() => void save()}>
          {t("other.save", { name: label })}
        </Button>
      </Space>
    </Form.Item>
  );
}

export function OtherTab() {
  const { t } = useTranslation();
  const { status } = useApp();
  const [checking, setChecking] = useState(false);

  const check = async () => {
    setChecking(true);
    const r = await checkForUpdate(String(status.version ?? ""));
    setChecking(false);
    if (r.kind === "failed") Message.error(t("other.updateCheckFailed"));
    else if (r.kind === "latest") Message.success(t("other.latest"));
    else {
      Modal.info({
        title: t("other.newVersion", { tag: r.tag }),
        content: <div className="sy-markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(r.body) }} />,
        okText: t("other.details"),
        onOk: () => {
          if (r.url) window.open(r.url, "_blank", "noopener");
        },
      });
    }
  };

  return (
    <Space direction="vertical" size="medium" style={{ width: "100%" }}>
      <Card title={t("other.systemInfo")} bordered={false}>
        <Descriptions
          column={1}
          data={[
            { label: t("home.version"), value: status.version || "-" },
            {
              label: t("home.startTime"),
              value: status.start_time ? timestampToString(Number(status.start_time)) : "-",
            },
          ]}
        />
        <Button loading={checking} onClick={() => void check()} style={{ marginTop: 8 }}>
          {t("other.checkUpdate")}
        </Button>
      </Card>
      <Card title={t("other.site")} bordered={false}>
        <Form layout="vertical">
          <SingleOption optionKey="Notice" label={t("other.notice")} multiline help={t("other.markdownHelp")} />
          <SingleOption optionKey="SystemName" label={t("other.systemName")} />
          <SingleOption optionKey="Logo" label={t("other.logo")} help={t("other.logoHelp")} />
          <SingleOption
            optionKey="HomePageContent"
            label={t("other.homePage")}
            multiline
            help={t("other.homePageHelp")}
          />
          <SingleOption optionKey="About" label={t("other.about")} multiline help={t("other.homePageHelp")} />
          <SingleOption optionKey="Footer" label={t("other.footer")} multiline help={t("other.footerHelp")} />
        </Form>
      </Card>
    </Space>
  );
}
