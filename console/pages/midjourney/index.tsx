// Drawing task log (spec 001 §2 Drawing log, §4 drawing action/code/status, §9 60 s duration warning).
import { useEffect, useState } from "react";
import { Alert, Image, Progress, Tag, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { ResponsiveTable, type RColumn } from "../../components/ResponsiveTable.tsx";
import { copyWithFallback } from "../../components/copy.tsx";
import { api, qs } from "../../api/index.ts";
import { isAdmin, useApp } from "../../lib/app-state.tsx";
import { timestampToString } from "../../lib/format.ts";
import { KEYS, readBool } from "../../lib/storage.ts";
import { DAY_MS, HOUR_MS, formatDateTime, parseDateTime } from "../_shared/time.ts";
import { taskDuration } from "../_shared/colors.ts";
import { LongText } from "../_shared/LongText.tsx";
import { TaskFilters, type TaskFilterValues } from "../_shared/TaskFilters.tsx";
import { useGrowingList } from "../_shared/useGrowingList.ts";
import { sizeOptions, usePageSize } from "../_shared/paging.ts";

export interface DrawingRow {
  id: number;
  submit_time: number;
  finish_time: number;
  channel_id: number;
  action: string;
  mj_id: string;
  code: number;
  status: string;
  progress: string;
  image_url: string;
  prompt: string;
  prompt_en: string;
  fail_reason: string;
  created_at?: number;
}

export const DRAWING_ACTIONS = [
  "IMAGINE",
  "UPSCALE",
  "VARIATION",
  "HIGH_VARIATION",
  "LOW_VARIATION",
  "PAN",
  "DESCRIBE",
  "BLEND",
  "UPLOAD",
  "SHORTEN",
  "REROLL",
  "INPAINT",
  "ZOOM",
  "CUSTOM_ZOOM",
  "MODAL",
  "SWAP_FACE",
];
const CODE_COLOR: Record<number, string> = { 1: "green", 21: "lime", 22: "orange", 0: "gray" };
const STATUS_COLOR: Record<string, string> = {
  NOT_START: "gray",
  SUBMITTED: "gold",
  IN_PROGRESS: "blue",
  SUCCESS: "green",
  FAILURE: "red",
  MODAL: "purple",
};

export default function MidjourneyPage() {
  const { t } = useTranslation();
  const { user, status } = useApp();
  const admin = isAdmin(user);
  const [size] = usePageSize("midjourney");
  const [filters, setFilters] = useState<TaskFilterValues>(() => ({
    channel: "",
    id: "",
    start: formatDateTime(new Date(Date.now() - 30 * DAY_MS)),
    end: formatDateTime(new Date(Date.now() + HOUR_MS)),
  }));
  const [error, setError] = useState("");

  const list = useGrowingList<DrawingRow>(async (p, s) => {
    const start = parseDateTime(filters.start);
    const end = parseDateTime(filters.end);
    const params = {
      p,
      page_size: s,
      mj_id: filters.id.trim(),
      channel_id: admin ? filters.channel.trim() : "",
      start_timestamp: start ? start.getTime() : "",
      end_timestamp: end ? end.getTime() : "",
    };
    return api.get<DrawingRow[]>(`${admin ? "/api/mj/" : "/api/mj/self"}${qs(params)}`);
  }, size);

  const search = () => {
    if ((filters.start && !parseDateTime(filters.start)) || (filters.end && !parseDateTime(filters.end)))
      return setError(t("ops.log.badTime"));
    setError("");
    void list.reload();
  };

  useEffect(() => {
    search();
  }, []);

  // The stored flag mj_notify_enabled hides the admin notice about the drawing callback.
  const showNotice = admin && !(status.mj_notify_enabled || readBool(KEYS.mjNotifyEnabled));

  // `from`: the table width (px) from which a column stays in the row; narrower, it moves to the row's details.
  const columns: Array<RColumn<DrawingRow>> = [
    {
      key: "submit",
      title: t("ops.task.submitTime"),
      dataIndex: "submit_time",
      render: (v: number) => <span className="sy-nowrap">{timestampToString(Math.floor(v / 1000))}</span>,
    },
    {
      title: t("ops.task.duration"),
      key: "duration",
      from: 700,
      render: (_: unknown, r: DrawingRow) => {
        const d = taskDuration(r.submit_time, r.finish_time, "ms");
        return (
          <Tag color={d.color} data-testid="duration">
            {d.text}
          </Tag>
        );
      },
    },
    ...(admin
      ? [
          {
            key: "channel",
            title: t("ops.log.channel"),
            dataIndex: "channel_id",
            from: 1100,
            render: (v: number) => (
              <Tag style={{ cursor: "pointer" }} onClick={() => copyWithFallback(String(v))}>
                {v}
              </Tag>
            ),
          },
        ]
      : []),
    {
      key: "action",
      title: t("ops.log.type"),
      dataIndex: "action",
      from: 560,
      render: (v: string) => (
        <Tag color="arcoblue">{DRAWING_ACTIONS.includes(v) ? t(`ops.mj.action.${v}`) : t("ops.unknown")}</Tag>
      ),
    },
    {
      key: "id",
      title: t("ops.task.taskId"),
      dataIndex: "mj_id",
      from: 900,
      render: (v: string) => <LongText text={v} title={t("ops.task.taskId")} max={16} />,
    },
    {
      key: "code",
      title: t("ops.mj.submitResult"),
      dataIndex: "code",
      from: 1200,
      render: (v: number) => (
        <Tag color={CODE_COLOR[v] ?? "gray"}>{t(`ops.mj.code.${v in CODE_COLOR ? v : "other"}`)}</Tag>
      ),
    },
    {
      key: "status",
      title: t("ops.task.status"),
      dataIndex: "status",
      render: (v: string) => (
        <Tag color={STATUS_COLOR[v] ?? "gray"}>
          {v ? t(`ops.mj.status.${v in STATUS_COLOR ? v : "other"}`) : t("ops.task.submitting")}
        </Tag>
      ),
    },
    {
      key: "progress",
      title: t("ops.task.progress"),
      dataIndex: "progress",
      from: 800,
      render: (v: string) => (
        <Progress percent={Number.parseInt(v || "0", 10) || 0} size="small" style={{ width: 90 }} />
      ),
    },
    {
      key: "image",
      title: t("ops.mj.image"),
      dataIndex: "image_url",
      from: 480,
      // The upstream's address, or the gateway's own /mj/image link (MjForwardUrlEnabled); nothing else is shown.
      render: (v: string) =>
        /^(https?:\/\/|\/)/i.test(v ?? "") ? (
          <Image src={v} width={64} height={64} alt="result" preview data-testid="mj-image" />
        ) : (
          t("ops.mj.noImage")
        ),
    },
    {
      key: "prompt",
      title: t("ops.mj.prompt"),
      dataIndex: "prompt",
      from: 1000,
      render: (v: string) => <LongText text={v} title={t("ops.mj.prompt")} max={24} />,
    },
    {
      key: "promptEn",
      title: t("ops.mj.promptEn"),
      dataIndex: "prompt_en",
      from: 1300,
      render: (v: string) => <LongText text={v} title={t("ops.mj.promptEn")} max={24} />,
    },
    {
      key: "fail",
      title: t("ops.task.failReason"),
      dataIndex: "fail_reason",
      from: 1150,
      render: (v: string) => <LongText text={v} title={t("ops.task.failReason")} max={24} />,
    },
  ];

  return (
    <Page title={t("ops.mj.title")}>
      {showNotice && (
        <Alert type="info" content={t("ops.mj.callbackNotice")} style={{ marginBottom: 12 }} data-testid="mj-notice" />
      )}
      <TaskFilters
        admin={admin}
        values={filters}
        onChange={setFilters}
        onSearch={search}
        idLabel={t("ops.task.taskId")}
      />
      {error && <Typography.Paragraph type="error">{error}</Typography.Paragraph>}
      <ResponsiveTable<DrawingRow>
        testId="mj-table"
        rowKey="id"
        loading={list.loading}
        columns={columns}
        data={list.rows}
        pagination={{ current: list.page, pageSize: size, total: list.total, sizeOptions, onChange: list.onPageChange }}
      />
    </Page>
  );
}
