// The keys of a multi-key channel (new-api's multi-key management, POST /api/channel/multi_key/manage): each
// key's state — enabled, disabled by hand, or disabled automatically with the reason and time — with
// actions per key and for all keys, filtered by state, a page at a time. Keys show only as a preview.
import { useCallback, useEffect, useState } from "react";
import { Button, Message, Popconfirm, Select, Space, Table, Tag, Tooltip, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { timestampToString } from "../../lib/format.ts";

interface KeyState {
  index: number;
  status: number;
  disabled_time?: number;
  reason?: string;
  key_preview: string;
}
interface KeyPage {
  keys: KeyState[];
  total: number;
  page: number;
  page_size: number;
  total_pages: number;
  enabled_count: number;
  manual_disabled_count: number;
  auto_disabled_count: number;
}

const PAGE_SIZE = 20;
const STATUS_TEXT: Record<number, [string, string]> = {
  1: ["ops.ch.mkEnabled", "green"],
  2: ["ops.ch.mkManual", "gray"],
  3: ["ops.ch.mkAuto", "red"],
};

export function MultiKeyPanel({ channelId }: { channelId: number }) {
  const { t } = useTranslation();
  const [data, setData] = useState<KeyPage | null>(null);
  const [page, setPage] = useState(1);
  const [status, setStatus] = useState<number | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const manage = useCallback(
    (action: string, extra: Record<string, unknown> = {}) =>
      api.post<any>("/api/channel/multi_key/manage", { channel_id: channelId, action, ...extra }),
    [channelId],
  );

  const load = useCallback(async () => {
    const r = await manage("get_key_status", { page, page_size: PAGE_SIZE, ...(status ? { status } : {}) });
    if (r.success && r.data) setData(r.data as KeyPage);
    else Message.error(r.message || t("ops.ch.refreshFailed"));
  }, [manage, page, status, t]);

  useEffect(() => {
    void load();
  }, [load]);

  const act = async (action: string, extra: Record<string, unknown> = {}) => {
    setBusy(true);
    const r = await manage(action, extra);
    setBusy(false);
    if (!r.success) return Message.error(r.message || t("ops.ch.submitFailed"));
    Message.success(r.message || t("ops.saved"));
    await load();
  };

  const columns = [
    { title: "#", dataIndex: "index", width: 56, render: (i: number) => i + 1 },
    {
      title: t("ops.ch.key"),
      dataIndex: "key_preview",
      render: (k: string) => <Typography.Text code>{k}</Typography.Text>,
    },
    {
      title: t("ops.status"),
      dataIndex: "status",
      width: 150,
      render: (s: number, k: KeyState) => {
        const [text, color] = STATUS_TEXT[s] ?? STATUS_TEXT[1]!;
        const tag = (
          <Tag color={color} data-testid={`mk-status-${k.index}`}>
            {t(text)}
          </Tag>
        );
        if (s === 1) return tag;
        const when = k.disabled_time ? timestampToString(k.disabled_time) : "";
        return <Tooltip content={[k.reason, when].filter(Boolean).join(" · ") || t(text)}>{tag}</Tooltip>;
      },
    },
    {
      title: t("ops.ch.mkReason"),
      dataIndex: "reason",
      render: (r: string | undefined, k: KeyState) =>
        k.status === 1 ? (
          ""
        ) : (
          <Typography.Text type="secondary" style={{ fontSize: 12 }} data-testid={`mk-reason-${k.index}`}>
            {[r, k.disabled_time ? timestampToString(k.disabled_time) : ""].filter(Boolean).join(" · ")}
          </Typography.Text>
        ),
    },
    {
      title: t("ops.actions"),
      width: 190,
      render: (_: unknown, k: KeyState) => (
        <Space>
          {k.status === 1 ? (
            <Button
              size="mini"
              onClick={() => act("disable_key", { key_index: k.index })}
              data-testid={`mk-disable-${k.index}`}
            >
              {t("ops.disable")}
            </Button>
          ) : (
            <Button
              size="mini"
              type="primary"
              onClick={() => act("enable_key", { key_index: k.index })}
              data-testid={`mk-enable-${k.index}`}
            >
              {t("ops.enable")}
            </Button>
          )}
          <Popconfirm title={t("ops.ch.mkConfirmDelete")} onOk={() => act("delete_key", { key_index: k.index })}>
            <Button size="mini" status="danger" data-testid={`mk-delete-${k.index}`}>
              {t("ops.delete")}
            </Button>
          </Popconfirm>
        </Space>
      ),
    },
  ];

  return (
    <div
      data-testid="multi-key-panel"
      style={{ border: "1px solid var(--color-border-2)", borderRadius: 4, padding: 12 }}
    >
      <Space wrap style={{ marginBottom: 8, justifyContent: "space-between", width: "100%" }}>
        <Typography.Text data-testid="mk-counts">
          {data
            ? t("ops.ch.mkCounts", {
                enabled: data.enabled_count,
                manual: data.manual_disabled_count,
                auto: data.auto_disabled_count,
              })
            : ""}
        </Typography.Text>
        <Space wrap>
          <Select
            size="small"
            style={{ width: 150 }}
            value={status ?? 0}
            onChange={(v) => {
              setPage(1);
              setStatus(v || undefined);
            }}
            data-testid="mk-filter"
            options={[
              { label: t("ops.ch.mkAll"), value: 0 },
              ...[1, 2, 3].map((s) => ({ label: t(STATUS_TEXT[s]![0]), value: s })),
            ]}
          />
          <Button size="small" loading={busy} onClick={() => act("enable_all_keys")} data-testid="mk-enable-all">
            {t("ops.ch.mkEnableAll")}
          </Button>
          <Popconfirm title={t("ops.ch.mkConfirmDisableAll")} onOk={() => act("disable_all_keys")}>
            <Button size="small" loading={busy} data-testid="mk-disable-all">
              {t("ops.ch.mkDisableAll")}
            </Button>
          </Popconfirm>
          <Popconfirm title={t("ops.ch.mkConfirmDeleteAuto")} onOk={() => act("delete_disabled_keys")}>
            <Button size="small" status="danger" loading={busy} data-testid="mk-delete-auto">
              {t("ops.ch.mkDeleteAuto")}
            </Button>
          </Popconfirm>
        </Space>
      </Space>
      <Table
        rowKey="index"
        size="small"
        columns={columns}
        data={data?.keys ?? []}
        loading={!data}
        border={false}
        pagination={
          data && data.total > PAGE_SIZE
            ? { current: data.page, pageSize: PAGE_SIZE, total: data.total, onChange: setPage, size: "mini" }
            : false
        }
      />
    </div>
  );
}
