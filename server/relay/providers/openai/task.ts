// OpenAI's video API as a task: POST /v1/videos creates a job and answers the video object ({id, status:
// queued | in_progress | completed | failed, progress, seconds, error}); GET /v1/videos/{id} reads it back
// (one at a time: there is no batch read); GET /v1/videos/{id}/content is the finished file.
import type { UpstreamRequest } from "../types.ts";
import type { SubmitOutcome, TaskAdaptor, TaskCall, TaskState } from "../task-types.ts";
import { asNumber, asString, percent, upstreamMessage } from "../task-types.ts";
import { TASK_STATUS } from "../../../catalogue/tasks.ts";

const STATUS: Record<string, string> = {
  queued: TASK_STATUS.queued,
  in_progress: TASK_STATUS.inProgress,
  completed: TASK_STATUS.success,
  failed: TASK_STATUS.failure,
  cancelled: TASK_STATUS.failure,
  canceled: TASK_STATUS.failure,
  expired: TASK_STATUS.failure,
};

/** Base URLs that end in a version segment take the path without /v1 (as for the exchange routes). */
function url(baseUrl: string, path: string): string {
  return /\/v\d+$/.test(baseUrl) && path.startsWith("/v1/") ? baseUrl + path.slice(3) : baseUrl + path;
}

function request(call: TaskCall, method: string, path: string, body?: unknown): UpstreamRequest {
  const headers: Record<string, string> = { authorization: `Bearer ${call.key}` };
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  }
  return { url: url(call.baseUrl, path), method, headers, body: payload };
}

/** The video object as a task state; the object itself is kept as the task's data. */
export function videoState(v: any): TaskState | null {
  const id = asString(v?.id);
  if (!id) return null;
  const status = STATUS[asString(v.status).toLowerCase()] ?? TASK_STATUS.unknown;
  const done = asNumber(v.completed_at);
  return {
    id,
    status,
    progress: status === TASK_STATUS.success ? "100%" : percent(v.progress),
    failReason:
      status === TASK_STATUS.failure
        ? asString(v.error?.message) || asString(v.error?.code) || "the video could not be generated"
        : "",
    finishTime: done ? done * 1000 : undefined,
    data: v,
  };
}

function readSubmit(json: any): SubmitOutcome {
  const id = asString(json?.id);
  return { accepted: id !== "", id, body: json, message: id ? undefined : "the upstream answered without a video id" };
}

export const openaiVideoTasks: TaskAdaptor = {
  platform: "openai",
  request,
  readSubmit,
  batchSize: 1,
  fetch: (call, ids) => request(call, "GET", `/v1/videos/${encodeURIComponent(ids[0]!)}`),
  readFetch(json) {
    const s = videoState(json);
    return s ? [s] : [];
  },
  probe: (call) => request(call, "GET", "/v1/models"),
  probeOk: (json) => Array.isArray(json?.data),
  errorMessage: upstreamMessage,
};
