// GET /api/user/models lists what the user can actually call: the models of every group the user may
// use (their own group plus the UserUsableGroups a token may be put in), not only their own group's.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { relayFixture, type RelayFixture } from "./fixtures.ts";

let fx: RelayFixture;

beforeAll(async () => {
  fx = await relayFixture("sqlite");
  await fx.channel({ base_url: fx.mock.url, models: ["um-default", "um-both"], groups: ["default"] });
  await fx.channel({ base_url: fx.mock.url, models: ["um-vip", "um-both"], groups: ["vip"] });
  await fx.channel({ base_url: fx.mock.url, models: ["um-secret"], groups: ["secret"] });
  await fx.channel({ base_url: fx.mock.url, models: ["um-off"], groups: ["default"], status: 2 });
});
afterAll(() => fx.close());

const models = async (as: Awaited<ReturnType<RelayFixture["user"]>>) =>
  (await fx.ctx.request("GET", "/api/user/models", { as })).body;

describe("GET /api/user/models", () => {
  test("the user's group plus every usable group, each model once, sorted; other groups and disabled channels left out", async () => {
    await fx.option("UserUsableGroups", JSON.stringify({ default: "Default", vip: "VIP" }));
    const user = await fx.user(0);
    expect(await models(user)).toEqual({ success: true, message: "", data: ["um-both", "um-default", "um-vip"] });
  });

  test("a user in a group outside UserUsableGroups also sees their own group's models", async () => {
    await fx.option("UserUsableGroups", JSON.stringify({ default: "Default", vip: "VIP" }));
    const user = await fx.user(0, { group: "secret" });
    expect((await models(user)).data).toEqual(["um-both", "um-default", "um-secret", "um-vip"]);
  });

  test("the list follows the UserUsableGroups option and matches what a token may select", async () => {
    await fx.option("UserUsableGroups", JSON.stringify({}));
    const user = await fx.user(0);
    expect((await models(user)).data).toEqual(["um-both", "um-default"]);
    const create = await fx.ctx.request("POST", "/api/token/", {
      as: user,
      body: { name: "t", group: "vip", remain_quota: 1, expired_time: -1 },
    });
    expect(create.body.success).toBe(false);
    await fx.option("UserUsableGroups", JSON.stringify({ vip: "VIP" }));
    expect((await models(user)).data).toEqual(["um-both", "um-default", "um-vip"]);
  });

  test("needs a login", async () => {
    expect((await fx.ctx.request("GET", "/api/user/models", {})).status).toBe(401);
  });
});
