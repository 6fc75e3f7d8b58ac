// The task adaptors, by channel kind. Adding a task provider is a task.ts in its folder (implementing
// TaskAdaptor of task-types.ts) and one line in TASK_ADAPTORS.
import { channelType } from "../../catalogue/index.ts";
import type { TaskAdaptor } from "./task-types.ts";
import { midjourneyTasks } from "./midjourney/task.ts";
import { sunoTasks } from "./suno/task.ts";
import { openaiVideoTasks } from "./openai/task.ts";

export type * from "./task-types.ts";

/** Keyed by ChannelKind: the kinds whose channels run tasks. */
const TASK_ADAPTORS: Record<string, TaskAdaptor> = {
  midjourney: midjourneyTasks,
  suno: sunoTasks,
  openai: openaiVideoTasks,
};

/** The task adaptor of a channel type, or undefined when its channels run no tasks. */
export function taskAdaptorFor(type: number): TaskAdaptor | undefined {
  const kind = channelType(type)?.kind;
  return kind ? TASK_ADAPTORS[kind] : undefined;
}
