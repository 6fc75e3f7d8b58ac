// What every module is built from. main.ts makes the real ones; tests make them over a temporary database.
import type { Config } from "./config.ts";
import type { Database } from "../db/index.ts";
import type { OptionStore } from "./modules/option/store.ts";
import type { Cache } from "./infra/cache.ts";
import type { OAuthEndpoints } from "./modules/oauth/endpoints.ts";

export interface AppDeps {
  config: Config;
  db: Database;
  options: OptionStore;
  cache: Cache;
  /** Epoch seconds when this process started (shown in the status object). */
  startTime: number;
  /** Work to finish on graceful shutdown (write-behind queues register here), in order. */
  shutdownHooks: (() => Promise<void>)[];
  /** Test-only: GitHub / Linux DO endpoints to use instead of the real providers' (defaults in modules/oauth/endpoints.ts). */
  oauthEndpoints?: Partial<OAuthEndpoints>;
}
