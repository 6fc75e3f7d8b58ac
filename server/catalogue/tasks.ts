// Facts of the task relays (spec 001 §3 Drawing task and Creative task, §4 drawing action types, submit
// result codes and statuses): what the server writes into `midjourneys` and `tasks` and the console reads
// back. Pure data, imported by both.

/** Where a `tasks` row's job runs (its `platform` column). Drawing tasks live in `midjourneys` instead. */
export const TASK_PLATFORM = { suno: "suno", openai: "openai" } as const;

/** Statuses of both tables. A drawing task also knows MODAL (waiting for a window); "" means still submitting. */
export const TASK_STATUS = {
  notStart: "NOT_START",
  submitted: "SUBMITTED",
  queued: "QUEUED",
  inProgress: "IN_PROGRESS",
  modal: "MODAL",
  success: "SUCCESS",
  failure: "FAILURE",
  unknown: "UNKNOWN",
} as const;

/** A task in one of these is finished: polling stops, and a failure has been refunded. */
export const FINISHED_STATUSES: readonly string[] = [TASK_STATUS.success, TASK_STATUS.failure];

/** midjourney-proxy's submit result codes: 1 submitted, 21 task exists / waiting, 22 queued (the spec's
 * "duplicate submission"). Only these mean the upstream took the job, so only these are billed. */
export const MJ_SUBMIT_CODE = { notSubmitted: 0, submitted: 1, exists: 21, queued: 22 } as const;
export const MJ_ACCEPTED_CODES: readonly number[] = [1, 21, 22];

export const MJ_ACTIONS = [
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
] as const;
export type MjAction = (typeof MJ_ACTIONS)[number];

/** The ModelPrice key (and routing model) of a drawing action: mj_<action>, face swap swap_face (new-api's names). */
export function mjPriceKey(action: string): string {
  return action === "SWAP_FACE" ? "swap_face" : `mj_${action.toLowerCase()}`;
}

export const SUNO_ACTIONS = ["MUSIC", "LYRICS"] as const;
export type SunoAction = (typeof SUNO_ACTIONS)[number];
export const sunoPriceKey = (action: SunoAction) => `suno_${action.toLowerCase()}`;

/** The action of an OpenAI video task (`tasks.action`). */
export const VIDEO_ACTION = "VIDEO";
/** Seconds of video OpenAI makes when the request names none. */
export const VIDEO_DEFAULT_SECONDS = 4;

/**
 * Default fixed prices in dollars (merged into the ModelPrice defaults): one call per drawing action or
 * Suno task; a second of video for the Sora models. INPAINT and CUSTOM_ZOOM cost nothing because they only
 * open a window: the MODAL call that follows is the billed one (as in new-api).
 */
export const DEFAULT_TASK_PRICES: Record<string, number> = {
  mj_imagine: 0.1,
  mj_variation: 0.1,
  mj_reroll: 0.1,
  mj_blend: 0.1,
  mj_modal: 0.1,
  mj_zoom: 0.1,
  mj_shorten: 0.1,
  mj_high_variation: 0.1,
  mj_low_variation: 0.1,
  mj_pan: 0.1,
  mj_inpaint: 0,
  mj_custom_zoom: 0,
  mj_describe: 0.05,
  mj_upscale: 0.05,
  mj_upload: 0.05,
  swap_face: 0.05,
  suno_music: 0.1,
  suno_lyrics: 0.01,
  "sora-2": 0.1,
  "sora-2-pro": 0.3,
};

/** The models a Midjourney Proxy or Suno channel offers by default: its price keys. */
export const MJ_MODELS: readonly string[] = MJ_ACTIONS.map(mjPriceKey);
export const SUNO_MODELS: readonly string[] = SUNO_ACTIONS.map(sunoPriceKey);
