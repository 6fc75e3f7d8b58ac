// midjourney-proxy (channel type 2) and Midjourney Proxy Plus (type 5): the task API both speak. Submits go
// to the same path the client called (/mj/submit/imagine, ..., under a mode prefix when one applies) with
// the channel key in mj-api-secret; the answer is {code, description, result, properties}, where codes 1,
// 21 and 22 mean the job was taken. Many tasks are read back with one POST /mj/task/list-by-condition.
import type { UpstreamRequest } from "../types.ts";
import type { SubmitOutcome, TaskAdaptor, TaskCall, TaskState } from "../task-types.ts";
import { asNumber, asString, percent, upstreamMessage } from "../task-types.ts";
import { MJ_ACCEPTED_CODES, MJ_SUBMIT_CODE, TASK_STATUS } from "../../../catalogue/tasks.ts";

/** 3: no Discord account available on that proxy; 23: its queue is full. Another channel may still take the job. */
const RETRY_CODES = new Set([3, 23]);

const KNOWN = new Set<string>([
  TASK_STATUS.notStart,
  TASK_STATUS.submitted,
  TASK_STATUS.modal,
  TASK_STATUS.inProgress,
  TASK_STATUS.success,
  TASK_STATUS.failure,
]);

function request(call: TaskCall, method: string, path: string, body?: unknown): UpstreamRequest {
  const headers: Record<string, string> = { "mj-api-secret": call.key, accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  return { url: call.baseUrl + path, method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
}

/** midjourney-proxy's status names; CANCEL ends the task like a failure. */
export function mjStatus(v: unknown): string {
  const s = asString(v).toUpperCase();
  if (s === "CANCEL" || s === "CANCELED" || s === "CANCELLED") return TASK_STATUS.failure;
  return KNOWN.has(s) ? s : s ? TASK_STATUS.unknown : TASK_STATUS.submitted;
}

/** One task as midjourney-proxy describes it (list-by-condition items and notify callbacks). */
export function mjState(dto: any): TaskState | null {
  const id = asString(dto?.id ?? dto?.mjId);
  if (!id) return null;
  return {
    id,
    status: mjStatus(dto.status),
    progress: percent(dto.progress),
    failReason: asString(dto.failReason),
    startTime: asNumber(dto.startTime),
    finishTime: asNumber(dto.finishTime),
    imageUrl: asString(dto.imageUrl),
    promptEn: asString(dto.promptEn),
    description: asString(dto.description),
    state: asString(dto.state),
    buttons: Array.isArray(dto.buttons) ? dto.buttons : undefined,
    properties: dto.properties && typeof dto.properties === "object" ? dto.properties : undefined,
  };
}

function readSubmit(json: any): SubmitOutcome {
  const code = Number(json?.code ?? MJ_SUBMIT_CODE.notSubmitted);
  const description = asString(json?.description);
  // upload-discord-images answers the uploaded links as its result: there is no task to follow.
  const id = typeof json?.result === "string" || typeof json?.result === "number" ? String(json.result) : "";
  const accepted = MJ_ACCEPTED_CODES.includes(code);
  const props = json?.properties && typeof json.properties === "object" ? json.properties : null;
  const state: Partial<TaskState> | undefined =
    code === MJ_SUBMIT_CODE.exists && props
      ? { status: props.status ? mjStatus(props.status) : undefined, imageUrl: asString(props.imageUrl) || undefined }
      : undefined;
  return {
    accepted,
    id,
    body: json,
    code,
    description,
    state,
    retry: !accepted && RETRY_CODES.has(code),
    message: accepted ? undefined : description || `the drawing service refused the task (code ${code})`,
  };
}

export const midjourneyTasks: TaskAdaptor = {
  platform: "midjourney",
  request,
  readSubmit,
  batchSize: 100,
  fetch: (call, ids) => request(call, "POST", "/mj/task/list-by-condition", { ids }),
  readFetch(json) {
    const list = Array.isArray(json) ? json : Array.isArray(json?.data) ? json.data : [];
    return list.map(mjState).filter((s: TaskState | null): s is TaskState => s !== null);
  },
  // An empty condition lists nothing: the cheapest call that needs a valid address and secret.
  probe: (call) => request(call, "POST", "/mj/task/list-by-condition", { ids: [] }),
  probeOk: (json) => Array.isArray(json),
  errorMessage: upstreamMessage,
};
