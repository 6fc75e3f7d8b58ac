// Colour rules of spec 001 §4 and §9, shared by the channel, log and task screens.
import { formatSeconds } from "../../lib/format.ts";

/** Channel test response time (ms): 0 untested, ≤1 s green, ≤3 s lime, ≤5 s yellow, else red. */
export function responseTimeColor(ms: number): "grey" | "green" | "lime" | "gold" | "red" {
  if (!ms) return "grey";
  if (ms <= 1000) return "green";
  if (ms <= 3000) return "lime";
  if (ms <= 5000) return "gold";
  return "red";
}

/** Log use time in seconds: under 101 s green, under 300 s orange, else red. */
export function elapsedColor(seconds: number): "green" | "orange" | "red" {
  if (seconds < 101) return "green";
  if (seconds < 300) return "orange";
  return "red";
}

/** First-token time in seconds: under 3 s green, under 10 s orange, else red. */
export function firstTokenColor(seconds: number): "green" | "orange" | "red" {
  if (seconds < 3) return "green";
  if (seconds < 10) return "orange";
  return "red";
}

/** Task duration: N/A when a time is missing, red over 60 s, else green. `unit` converts the inputs to seconds. */
export function taskDuration(
  submit: number,
  finish: number,
  unit: "s" | "ms",
): { text: string; color: "red" | "green" | "grey" } {
  if (!submit || !finish) return { text: "N/A", color: "grey" };
  const seconds = (finish - submit) / (unit === "ms" ? 1000 : 1);
  return { text: formatSeconds(seconds, 1), color: seconds > 60 ? "red" : "green" };
}
