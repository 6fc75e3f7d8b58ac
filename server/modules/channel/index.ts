import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok, paging } from "../../http/envelope.ts";
import { ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import * as m from "./model.ts";
import { startTestAll, testAllProgress, testChannel } from "./testing.ts";
import { balanceRefreshProgress, startBalanceRefresh, updateBalance } from "./balance.ts";
import { fetchChannelModels, fetchModelsFor } from "./upstream-models.ts";
import { viewChannelKey } from "./key-view.ts";
import { copyChannel } from "./copy.ts";
import { manageMultiKeys, tagModels, type MultiKeyRequest } from "./multi-key.ts";
import { clientIp, enforceLimit } from "../../http/ratelimit.ts";
import { sessionTag } from "../twofa/secure.ts";
import { anyReply, okReply } from "../../http/schema.ts";

const flag = (v: string | undefined) => v === "true" || v === "1";
const optInt = (v: string | undefined) =>
  v !== undefined && v !== "" && Number.isInteger(Number(v)) ? Number(v) : undefined;

function listQuery(q: Record<string, string | undefined>): svc.ChannelListQuery {
  return {
    ...paging(q),
    idSort: flag(q.id_sort),
    tagMode: flag(q.tag_mode),
    keyword: q.keyword,
    group: q.group,
    model: q.model,
    status: optInt(q.status),
    type: optInt(q.type),
  };
}

/** new-api wraps the channel as {mode, channel: {...}}; one-api sends the channel itself. */
function unwrap(body: Record<string, any>): svc.ChannelInput {
  if (body.channel && typeof body.channel === "object") {
    const { channel, ...rest } = body;
    return { ...channel, ...rest };
  }
  return body;
}

export function channelModule(deps: AppDeps) {
  const admin = { role: ROLE.admin };
  return (
    new Elysia({ prefix: "/api/channel", tags: ["channel"] })
      .use(authPlugin(deps))
      .get("/", async ({ query }) => ok(await svc.listChannels(deps, listQuery(query))), {
        ...admin,
        query: m.listQuery,
        detail: { summary: "List channels (one page; tag_mode groups them by tag)" },
        response: m.channelPage,
      })
      .get("/search", async ({ query }) => ok(await svc.listChannels(deps, listQuery(query))), {
        ...admin,
        query: m.listQuery,
        detail: { summary: "Search channels by keyword, group, model, status or type" },
        response: m.channelPage,
      })
      // Testing every channel can take minutes: answered at once, run in the background (jobs/background.ts).
      .get(
        "/test",
        () => {
          const run = startTestAll(deps);
          return ok(
            run.progress,
            run.started
              ? "testing all channels started in the background"
              : "a test of all channels is already running",
          );
        },
        { ...admin, detail: { summary: "Test every channel (in the background)" }, response: m.testRunReply },
      )
      // ?since=N leaves out the first N per-channel results (the console polls while a run goes on).
      .get("/test/progress", ({ query }) => ok(testAllProgress(deps, optInt(query.since) ?? 0)), {
        ...admin,
        query: m.progressQuery,
        detail: { summary: "Progress of the test of every channel" },
        response: m.testRunReply,
      })
      .get(
        "/test/:id",
        async ({ params, query }) => {
          const r = await testChannel(deps, params.id, { model: query.model });
          return { success: r.success, message: r.message, time: r.time };
        },
        {
          ...admin,
          params: m.idParam,
          query: m.testQuery,
          detail: { summary: "Test one channel with a model" },
          response: m.testReply,
        },
      )
      // Refreshing every channel takes one upstream round trip each: answered at once, run in the background.
      .get(
        "/update_balance",
        () => {
          const run = startBalanceRefresh(deps);
          return ok(
            { ...run.progress },
            run.started
              ? "updating the balances of all channels in the background"
              : "a balance update of all channels is already running",
          );
        },
        {
          ...admin,
          detail: { summary: "Refresh every channel's balance (in the background)" },
          response: m.balanceRunReply,
        },
      )
      .get("/update_balance/progress", ({ query }) => ok(balanceRefreshProgress(deps, optInt(query.since) ?? 0)), {
        ...admin,
        query: m.progressQuery,
        detail: { summary: "Progress of the balance refresh" },
        response: m.balanceRunReply,
      })
      .get(
        "/update_balance/:id",
        async ({ params }) => {
          const balance = await updateBalance(deps, params.id);
          return { success: true, message: "", balance, data: { balance } };
        },
        { ...admin, params: m.idParam, detail: { summary: "Refresh one channel's balance" }, response: m.balanceReply },
      )
      .get("/fetch_models/:id", async ({ params }) => ok(await fetchChannelModels(deps, params.id)), {
        ...admin,
        params: m.idParam,
        detail: { summary: "The models a channel's upstream lists" },
        response: m.modelsReply,
      })
      .post("/fetch_models", async ({ body }) => ok(await fetchModelsFor(body)), {
        ...admin,
        body: m.fetchModelsBody,
        detail: { summary: "The models an upstream lists, for a channel not yet saved" },
        response: m.modelsReply,
      })
      .delete("/disabled", async () => ok(await svc.deleteDisabled(deps)), {
        ...admin,
        detail: { summary: "Delete every disabled channel" },
        response: anyReply,
      })
      .post("/batch", async ({ body }) => ok(await svc.batchDelete(deps, body.ids)), {
        ...admin,
        body: m.idsBody,
        detail: { summary: "Delete channels by id" },
        response: anyReply,
      })
      .post("/batch/tag", async ({ body }) => ok(await svc.batchSetTag(deps, body.ids, body.tag)), {
        ...admin,
        body: m.batchTagBody,
        detail: { summary: "Set the tag of channels" },
        response: anyReply,
      })
      .post("/fix", async () => ok(await svc.fixAbilities(deps)), {
        ...admin,
        detail: { summary: "Rebuild the model abilities of every channel" },
        response: anyReply,
      })
      .put("/tag", async ({ body }) => ok(await svc.editTag(deps, body)), {
        ...admin,
        body: m.tagEditBody,
        detail: { summary: "Edit every channel of a tag" },
        response: anyReply,
      })
      .post("/tag/enabled", async ({ body }) => ok(await svc.setTagStatus(deps, body.tag, 1)), {
        ...admin,
        body: m.tagBody,
        detail: { summary: "Enable every channel of a tag" },
        response: anyReply,
      })
      .post("/tag/disabled", async ({ body }) => ok(await svc.setTagStatus(deps, body.tag, 2)), {
        ...admin,
        body: m.tagBody,
        detail: { summary: "Disable every channel of a tag" },
        response: anyReply,
      })
      .get("/tag/models", async ({ query }) => ok(await tagModels(deps, query.tag)), {
        ...admin,
        query: m.tagQuery,
        detail: { summary: "The models of a tag's channels" },
        response: anyReply,
      })
      .post(
        "/multi_key/manage",
        async ({ body }) => {
          const r = await manageMultiKeys(deps, body as MultiKeyRequest);
          return ok(r.data, r.message);
        },
        {
          ...admin,
          body: m.multiKeyBody,
          detail: { summary: "Manage the keys of a multi-key channel" },
          response: anyReply,
        },
      )
      .get("/:id", async ({ params }) => ok(svc.channelView(await svc.getChannel(deps, params.id), true)), {
        ...admin,
        params: m.idParam,
        detail: { summary: "One channel (its key blank)" },
        response: m.channelReply,
      })
      // The key, to the super admin only, after a fresh verification; every view is logged (key-view.ts).
      .post(
        "/:id/key",
        async ({ user, params, body, cookie, request, server }) => {
          await enforceLimit(deps, "critical", clientIp(request, server as any, deps.config.trustProxy));
          const proof = {
            password: body?.password || undefined,
            code: body?.code ? String(body.code) : undefined,
            sessionTag: sessionTag(cookie),
          };
          return ok(await viewChannelKey(deps, user, params.id, proof), "");
        },
        {
          role: ROLE.root,
          params: m.idParam,
          body: m.keyViewBody,
          detail: { summary: "Reveal a channel's key (super admin, fresh verification)" },
          response: anyReply,
        },
      )
      .post(
        "/copy/:id",
        async ({ params, query }) =>
          ok(
            await copyChannel(deps, params.id, { suffix: query.suffix, resetBalance: query.reset_balance !== "false" }),
          ),
        { ...admin, params: m.idParam, query: m.copyQuery, detail: { summary: "Copy a channel" }, response: anyReply },
      )
      .post("/", async ({ body }) => ok(await svc.createChannels(deps, unwrap(body)), "channel created"), {
        ...admin,
        body: m.channelBody,
        detail: { summary: "Create channels (single, batch, or multi-key)" },
        response: anyReply,
      })
      .put("/", async ({ body }) => ok(await svc.updateChannel(deps, unwrap(body))), {
        ...admin,
        body: m.channelBody,
        detail: { summary: "Update a channel" },
        response: anyReply,
      })
      .delete(
        "/:id",
        async ({ params }) => {
          await svc.deleteChannel(deps, params.id);
          return ok(undefined, "channel deleted");
        },
        { ...admin, params: m.idParam, detail: { summary: "Delete a channel" }, response: okReply },
      )
  );
}
