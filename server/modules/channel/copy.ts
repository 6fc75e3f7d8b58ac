// POST /api/channel/copy/{id}?suffix=&reset_balance= (new-api's CopyChannel): a duplicate made on the server,
// key included, now that the console never receives keys to send back.
import type { AppDeps } from "../../deps.ts";
import { nowSeconds } from "../../../db/index.ts";
import { refreshAbilities } from "./abilities.ts";
import { notifyChannelsChanged } from "./events.ts";
import { getChannel, insertChannel } from "./service.ts";
import { parseChannelInfo, serializeChannelInfo } from "./keys.ts";

export async function copyChannel(
  deps: AppDeps,
  id: number,
  opts: { suffix?: string; resetBalance?: boolean } = {},
): Promise<{ id: number }> {
  const { id: _id, ...origin } = await getChannel(deps, id);
  const info = parseChannelInfo(origin.channel_info);
  const clone = {
    ...origin,
    name: `${origin.name}${opts.suffix ?? "_copy"}`,
    created_time: nowSeconds(),
    test_time: 0,
    response_time: 0,
    ...(opts.resetBalance === false ? {} : { balance: 0, balance_updated_time: 0, used_quota: 0 }),
    // A rotating channel starts its own rotation; keys set aside on the original are not set aside here.
    channel_info: serializeChannelInfo(
      info.is_multi_key ? { ...info, multi_key_polling_index: 0, multi_key_failed_at: {} } : info,
    ),
    other_info: "",
  };
  const newId = await deps.db.transaction().execute(async (trx) => {
    const made = await insertChannel(trx, clone);
    await refreshAbilities(trx, [made]);
    return made;
  });
  await notifyChannelsChanged(deps);
  return { id: newId };
}
