// Creative task log (spec 001 §2 Creative task log, §4 creative task states, §9 duration colours).
import { useEffect, useState } from "react";
import { Image, Modal, Progress, Space, Tag, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { ResponsiveTable, type RColumn } from "../../components/ResponsiveTable.tsx";
import { copyWithFallback } from "../../components/copy.tsx";
import { api, qs } from "../../api/index.ts";
import { isAdmin, useApp } from "../../lib/app-state.tsx";
import { timestampToString } from "../../lib/format.ts";
import { formatDateTime, parseDateTime, startOfToday, toSeconds } from "../_shared/time.ts";
import { taskDuration } from "../_shared/colors.ts";
import { LongText } from "../_shared/LongText.tsx";
import { TaskFilters, type TaskFilterValues } from "../_shared/TaskFilters.tsx";
import { useGrowingList } from "../_shared/useGrowingList.ts";
import { sizeOptions, usePageSize } from "../_shared/paging.ts";

export interface TaskRow {
  id: number;
  submit_time: number;
  finish_time: number;
  progress: string;
  channel_id: number;
  platform: string;
  action: string;
  task_id: string;
  status: string;
  fail_reason: string;
  created_at?: number;
  data?: unknown;
  [k: string]: unknown;
}

const ACTIONS = ["MUSIC", "LYRICS", "VIDEO"];
const PLATFORM_NAME: Record<string, string> = { suno: "Suno", openai: "OpenAI" };

/** Links from the upstream's task data are shown only when they are plain http(s) addresses. */
const webUrl = (v: unknown): string => (typeof v === "string" && /^https?:\/\//i.test(v) ? v : "");

/** A finished Suno task's clips: the first cover image and a link per audio file. */
function TaskResult({ data }: { data: unknown }) {
  const { t } = useTranslation();
  const clips = Array.isArray(data)
    ? (data.filter((c) => c && typeof c === "object") as Record<string, unknown>[])
    : [];
  const image = clips.map((c) => webUrl(c.image_url) || webUrl(c.image_large_url)).find(Boolean);
  const audio = clips.map((c) => webUrl(c.audio_url)).filter(Boolean);
  if (!image && audio.length === 0) return <span>-</span>;
  return (
    <Space size={4}>
      {image && <Image src={image} width={48} height={48} alt="cover" preview data-testid="task-image" />}
      {audio.map((href, i) => (
        <a key={href} href={href} target="_blank" rel="noreferrer" style={{ whiteSpace: "nowrap" }}>
          {t("ops.task.audio")} {i + 1}
        </a>
      ))}
    </Space>
  );
}

const STATUS_COLOR: Record<string, string> = {
  SUCCESS: "green",
  NOT_START: "gray",
  SUBMITTED: "gold",
  IN_PROGRESS: "blue",
  FAILURE: "red",
  QUEUED: "orange",
  UNKNOWN: "gray",
};

export default function TaskPage() {
  const { t } = useTranslation();
  const { user } = useApp();
  const admin = isAdmin(user);
  const [size] = usePageSize("task");
  const [filters, setFilters] = useState<TaskFilterValues>(() => ({
    channel: "",
    id: "",
    start: formatDateTime(startOfToday()),
    end: "",
  }));
  const [detail, setDetail] = useState<TaskRow | null>(null);
  const [error, setError] = useState("");

  const list = useGrowingList<TaskRow>(async (p, s) => {
    const start = parseDateTime(filters.start);
    const end = parseDateTime(filters.end);
    const params = {
      p,
      page_size: s,
      task_id: filters.id.trim(),
      channel_id: admin ? filters.channel.trim() : "",
      start_timestamp: start ? toSeconds(start) : "",
      end_timestamp: end ? toSeconds(end) : "",
    };
    return api.get<TaskRow[]>(`${admin ? "/api/task/" : "/api/task/self"}${qs(params)}`);
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

  // `from`: the table width (px) from which a column stays in the row; narrower, it moves to the row's details.
  const columns: Array<RColumn<TaskRow>> = [
    {
      key: "submit",
      title: t("ops.task.submitTime"),
      dataIndex: "submit_time",
      render: (v: number) => <span className="sy-nowrap">{timestampToString(v)}</span>,
    },
    {
      key: "finish",
      title: t("ops.task.finishTime"),
      dataIndex: "finish_time",
      from: 1100,
      render: (v: number) => <span className="sy-nowrap">{timestampToString(v)}</span>,
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
      title: t("ops.task.duration"),
      key: "duration",
      from: 700,
      render: (_: unknown, r: TaskRow) => {
        const d = taskDuration(r.submit_time, r.finish_time, "s");
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
            from: 1200,
            render: (v: number) => (
              <Tag style={{ cursor: "pointer" }} onClick={() => copyWithFallback(String(v))}>
                {v}
              </Tag>
            ),
          },
        ]
      : []),
    {
      key: "platform",
      title: t("ops.task.platform"),
      dataIndex: "platform",
      from: 960,
      render: (v: string) => <Tag color="purple">{PLATFORM_NAME[v] ?? (v || t("ops.unknown"))}</Tag>,
    },
    {
      key: "action",
      title: t("ops.log.type"),
      dataIndex: "action",
      from: 560,
      render: (v: string) => (
        <Tag color="arcoblue">{ACTIONS.includes(v) ? t(`ops.task.action.${v}`) : t("ops.unknown")}</Tag>
      ),
    },
    {
      key: "id",
      title: t("ops.task.taskId"),
      dataIndex: "task_id",
      from: 640,
      render: (v: string, r: TaskRow) => (
        <span className="sy-clip sy-link-primary" style={{ maxWidth: 140 }} title={v} onClick={() => setDetail(r)}>
          {v}
        </span>
      ),
    },
    {
      key: "status",
      title: t("ops.task.status"),
      dataIndex: "status",
      render: (v: string) => (
        <Tag color={STATUS_COLOR[v] ?? "gray"}>
          {v ? t(`ops.task.status.${v in STATUS_COLOR ? v : "UNKNOWN"}`) : t("ops.task.submitting")}
        </Tag>
      ),
    },
    {
      key: "result",
      title: t("ops.task.result"),
      dataIndex: "data",
      from: 480,
      render: (v: unknown) => <TaskResult data={v} />,
    },
    {
      key: "fail",
      title: t("ops.task.failReason"),
      dataIndex: "fail_reason",
      from: 1050,
      render: (v: string) => <LongText text={v} title={t("ops.task.failReason")} max={24} />,
    },
  ];

  return (
    <Page title={t("ops.task.title")}>
      <TaskFilters
        admin={admin}
        values={filters}
        onChange={setFilters}
        onSearch={search}
        idLabel={t("ops.task.taskId")}
      />
      {error && <Typography.Paragraph type="error">{error}</Typography.Paragraph>}
      <ResponsiveTable<TaskRow>
        testId="task-table"
        rowKey="id"
        loading={list.loading}
        columns={columns}
        data={list.rows}
        pagination={{ current: list.page, pageSize: size, total: list.total, sizeOptions, onChange: list.onPageChange }}
      />
      <Modal
        title={t("ops.task.detail")}
        visible={!!detail}
        onCancel={() => setDetail(null)}
        footer={null}
        style={{ width: 720 }}
      >
        <pre
          style={{ whiteSpace: "pre-wrap", wordBreak: "break-word", maxHeight: "60vh", overflow: "auto" }}
          data-testid="task-detail"
        >
          {detail ? JSON.stringify(detail, null, 2) : ""}
        </pre>
      </Modal>
    </Page>
  );
}
