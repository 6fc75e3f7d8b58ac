// Suno (channel type 36) through the Suno API servers one-api/new-api users run: POST /suno/submit/{music,
// lyrics} answers {code: "success", data: "<task id>"}; POST /suno/fetch {ids} answers {code: "success",
// data: [{task_id, action, status, fail_reason, submit_time, start_time, finish_time, progress?, data}]}.
import type { UpstreamRequest } from "../types.ts";
import type { SubmitOutcome, TaskAdaptor, TaskCall, TaskState } from "../task-types.ts";
import { asNumber, asString, percent, upstreamMessage } from "../task-types.ts";
import { TASK_STATUS } from "../../../catalogue/tasks.ts";

/** Upstreams spell statuses in several ways; each maps to one of the spec's creative-task statuses. */
const STATUS: Record<string, string> = {
  not_start: TASK_STATUS.notStart,
  submitted: TASK_STATUS.submitted,
  queued: TASK_STATUS.queued,
  queueing: TASK_STATUS.queued,
  in_progress: TASK_STATUS.inProgress,
  processing: TASK_STATUS.inProgress,
  running: TASK_STATUS.inProgress,
  streaming: TASK_STATUS.inProgress,
  success: TASK_STATUS.success,
  succeeded: TASK_STATUS.success,
  complete: TASK_STATUS.success,
  completed: TASK_STATUS.success,
  failure: TASK_STATUS.failure,
  failed: TASK_STATUS.failure,
  error: TASK_STATUS.failure,
};

/** Progress when the upstream reports none (new-api's steps): a bar that moves with the status. */
export const STATUS_PROGRESS: Record<string, string> = {
  [TASK_STATUS.notStart]: "0%",
  [TASK_STATUS.submitted]: "10%",
  [TASK_STATUS.queued]: "20%",
  [TASK_STATUS.inProgress]: "30%",
  [TASK_STATUS.success]: "100%",
  [TASK_STATUS.failure]: "100%",
};

export function sunoStatus(v: unknown): string {
  return STATUS[asString(v).toLowerCase()] ?? TASK_STATUS.unknown;
}

/** Unix seconds or milliseconds → milliseconds. */
const ms = (v: unknown): number | undefined => {
  const n = asNumber(v);
  return n === undefined || n <= 0 ? undefined : n > 1e12 ? n : n * 1000;
};

function request(call: TaskCall, method: string, path: string, body?: unknown): UpstreamRequest {
  const headers: Record<string, string> = { authorization: `Bearer ${call.key}`, accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  return { url: call.baseUrl + path, method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
}

function readSubmit(json: any): SubmitOutcome {
  const ok = asString(json?.code).toLowerCase() === "success";
  const id = ok && (typeof json?.data === "string" || typeof json?.data === "number") ? String(json.data) : "";
  return {
    accepted: ok && id !== "",
    id,
    body: json,
    message: ok && id ? undefined : asString(json?.message) || "the Suno service refused the task",
  };
}

function state(item: any): TaskState | null {
  const id = asString(item?.task_id ?? item?.id);
  if (!id) return null;
  const status = sunoStatus(item.status);
  return {
    id,
    status,
    progress: percent(item.progress) ?? STATUS_PROGRESS[status],
    failReason: asString(item.fail_reason),
    startTime: ms(item.start_time),
    finishTime: ms(item.finish_time),
    data: item.data ?? null,
  };
}

export const sunoTasks: TaskAdaptor = {
  platform: "suno",
  request,
  readSubmit,
  batchSize: 100,
  fetch: (call, ids) => request(call, "POST", "/suno/fetch", { ids }),
  readFetch(json) {
    if (asString(json?.code).toLowerCase() !== "success" || !Array.isArray(json?.data)) return [];
    return json.data.map(state).filter((s: TaskState | null): s is TaskState => s !== null);
  },
  probe: (call) => request(call, "POST", "/suno/fetch", { ids: [] }),
  probeOk: (json) => asString(json?.code).toLowerCase() === "success",
  errorMessage: upstreamMessage,
};
