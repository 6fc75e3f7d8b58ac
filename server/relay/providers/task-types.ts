// The task adaptor interface (submit → poll → settle): what a provider that runs jobs asynchronously
// (Midjourney proxies, Suno, OpenAI video) tells the task endpoint (endpoints/task.ts) and the poller
// (jobs/task-poller.ts): how to submit one, how to ask about many at once, and how to read the answers in
// the gateway's terms. Plus the small readers the adaptors share.
import type { UpstreamRequest } from "./types.ts";

/** The channel an upstream task call goes to: its base URL, one of its keys, and its type. */
export interface TaskCall {
  baseUrl: string;
  key: string;
  channelType: number;
}

/** What the upstream says about one task, in the gateway's statuses (catalogue TASK_STATUS). */
export interface TaskState {
  id: string;
  status: string;
  /** "N%"; absent when the upstream does not report it */
  progress?: string;
  failReason?: string;
  /** milliseconds */
  startTime?: number;
  finishTime?: number;
  imageUrl?: string;
  promptEn?: string;
  description?: string;
  state?: string;
  buttons?: unknown;
  properties?: unknown;
  /** The upstream's own record of the result (Suno clips, the video object), kept in tasks.data. */
  data?: unknown;
}

/** How the upstream answered a submit. */
export interface SubmitOutcome {
  accepted: boolean;
  /** the upstream's task id */
  id: string;
  /** the answer the client gets (already in the client's wire format) */
  body: unknown;
  /** midjourney-proxy's result code and description */
  code?: number;
  description?: string;
  /** what the upstream already knows about the task (MJ code 21: a task that exists) */
  state?: Partial<TaskState>;
  /** a refusal another channel may not repeat (queue full, no account): the next channel is tried */
  retry?: boolean;
  /** why it was refused */
  message?: string;
}

export interface TaskAdaptor {
  platform: "midjourney" | "suno" | "openai";
  /** Any call on the upstream's task API (submit, image seed, video content), with the channel's auth. */
  request(call: TaskCall, method: string, path: string, body?: unknown): UpstreamRequest;
  /** Reads a 2xx answer to a submit. */
  readSubmit(json: any): SubmitOutcome;
  /** How many ids one fetch may carry (1: the upstream has no batch fetch). */
  batchSize: number;
  /** The fetch of these ids' current state. */
  fetch(call: TaskCall, ids: string[]): UpstreamRequest;
  /** Reads the fetch answer: the tasks the upstream knows (missing ones are left as they are). */
  readFetch(json: any, ids: string[]): TaskState[];
  /** The cheapest call that proves the channel's address and key work (channel test), and whether its
   * 2xx answer says so. */
  probe(call: TaskCall): UpstreamRequest;
  probeOk(json: any): boolean;
  /** A readable message from an upstream error body (never keys or URLs). */
  errorMessage(status: number, text: string): string;
}

/** "N%" from a number or a string like "45%" / "45", clamped to 0..100; undefined when unreadable. */
export function percent(v: unknown): string | undefined {
  const n = typeof v === "number" ? v : typeof v === "string" ? Number.parseFloat(v) : NaN;
  if (!Number.isFinite(n)) return undefined;
  return `${Math.max(0, Math.min(100, Math.round(n)))}%`;
}

/** The message of a JSON error body in any of the usual shapes, else a status line. */
export function upstreamMessage(status: number, text: string): string {
  try {
    const j = JSON.parse(text);
    const m = j?.error?.message ?? j?.description ?? j?.message ?? j?.error ?? j?.detail;
    if (typeof m === "string" && m) return m;
  } catch {}
  return `upstream answered with status ${status}`;
}

export const asString = (v: unknown): string =>
  typeof v === "string" ? v : v === null || v === undefined ? "" : String(v);
export const asNumber = (v: unknown): number | undefined => {
  const n = Number(v);
  return v !== null && v !== undefined && v !== "" && Number.isFinite(n) ? n : undefined;
};
