// Tests fetch from their own mock servers on 127.0.0.1 and random ports. The outbound guard refuses both by
// default, so a test that needs it opens them through the options, as an operator with a local image
// server would: that is the feature at work, not a way around it.
import type { OptionStore } from "../../server/modules/option/store.ts";

export const LOCAL_FETCHES: Record<string, string> = {
  "fetch_setting.allow_private_ip": "true",
  "fetch_setting.allowed_ports": "[]",
};

export async function allowLocalFetches(options: OptionStore): Promise<void> {
  for (const [k, v] of Object.entries(LOCAL_FETCHES)) await options.set(k, v);
}
