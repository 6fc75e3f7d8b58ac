// The root session of a relay fixture (the setup wizard has made root / rootpass123).
import type { RelayFixture } from "../relay/fixtures.ts";
import { ROOT_PASSWORD } from "../helpers/app.ts";
import type { Session } from "../helpers/app.ts";

export function loginRoot(fx: RelayFixture): Promise<Session> {
  return fx.ctx.login("root", ROOT_PASSWORD);
}
