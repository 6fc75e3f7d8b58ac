// What the dashboard options ask of whoever records usage: whether to keep the hourly quota_data rollup
// at all (DataExportEnabled) and how often to write it (DataExportInterval, minutes). Read live, so an
// operator's change applies to the next call and the next flush.
import type { OptionStore } from "../option/store.ts";

export interface DataExportPolicy {
  enabled(): boolean;
  /** How long rollups gather in memory between writes. */
  intervalMs(): number;
}

export function dataExportPolicy(options: OptionStore): DataExportPolicy {
  return {
    enabled: () => options.bool("DataExportEnabled"),
    intervalMs: () => Math.max(1, options.number("DataExportInterval", 5)) * 60_000,
  };
}
