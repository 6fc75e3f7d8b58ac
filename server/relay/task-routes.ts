// Routes of the task relays: midjourney-proxy's (also under /relax, /fast and /turbo), the Suno API's and
// OpenAI's video API. Keys as the relay takes them (Authorization: Bearer sk-...), plus midjourney-proxy's
// mj-api-secret header on the drawing routes.
import { Elysia } from "elysia";
import type { AppDeps } from "../deps.ts";
import { AppError } from "../http/errors.ts";
import { clientIp } from "../http/ratelimit.ts";
import { decodeOr400 } from "../http/paths.ts";
import { authenticate, presentedKey } from "./auth.ts";
import { parseJsonObject, readBodyText, textWithin } from "./body.ts";
import {
  MJ_MODES,
  MJ_SUBMITS,
  mjAnswer,
  mjFetch,
  mjImage,
  mjImageSeed,
  mjList,
  mjNotify,
  mjSubmit,
  type MjMode,
  type MjSubmit,
} from "./endpoints/midjourney.ts";
import { sunoAnswer, sunoFetchMany, sunoFetchOne, sunoSubmit } from "./endpoints/suno.ts";
import { videoContent, videoGet, videoSubmit } from "./endpoints/video.ts";

type Ctx = {
  request: Request;
  server: any;
  body: unknown;
  params: Record<string, string>;
  query: Record<string, string | undefined>;
};

export function taskRoutesModule(deps: AppDeps) {
  const limit = deps.config.maxBodyBytes;
  const caller = (request: Request, server: any, mjSecret = false) => {
    const ip = clientIp(request, server, deps.config.trustProxy);
    const key = presentedKey(request) || (mjSecret ? (request.headers.get("mj-api-secret") ?? "").trim() : "");
    return authenticate(deps, key, ip).then((c) => ({ caller: c, ip }));
  };
  // A body that cannot be read (too large) is handed to the route as its error, so it is answered in the
  // route's own error shape (midjourney-proxy's, the Suno API's) instead of the generic one.
  const read = textWithin(limit);
  const json = {
    parse: (c: { request: Request }) =>
      read(c).catch((e: unknown) =>
        e instanceof AppError ? e : new AppError(400, "the request body could not be read"),
      ),
  };
  const bodyOf = (raw: unknown) => {
    if (raw instanceof AppError) throw raw;
    return parseJsonObject(raw);
  };

  let app = new Elysia({ name: "task-relay" }) as any;
  for (const mode of [null, ...MJ_MODES] as (MjMode | null)[]) {
    const p = mode ? `/${mode}/mj` : "/mj";
    const submit = (kind: MjSubmit, path: string) => (c: Ctx) =>
      mjAnswer(async () => {
        const { caller: who, ip } = await caller(c.request, c.server, true);
        return mjSubmit(deps, kind, path, bodyOf(c.body), { caller: who, ip, mode });
      });
    for (const kind of MJ_SUBMITS) app = app.post(`${p}/submit/${kind}`, submit(kind, `/mj/submit/${kind}`), json);
    app = app
      .post(`${p}/insight-face/swap`, submit("swap", "/mj/insight-face/swap"), json)
      .get(`${p}/task/:id/fetch`, (c: Ctx) =>
        mjAnswer(async () =>
          mjFetch(deps, (await caller(c.request, c.server, true)).caller, decodeOr400(c.params.id!)),
        ),
      )
      .post(
        `${p}/task/list-by-condition`,
        (c: Ctx) =>
          mjAnswer(async () => mjList(deps, (await caller(c.request, c.server, true)).caller, bodyOf(c.body))),
        json,
      )
      .get(`${p}/task/:id/image-seed`, (c: Ctx) =>
        mjAnswer(async () =>
          mjImageSeed(deps, (await caller(c.request, c.server, true)).caller, decodeOr400(c.params.id!), mode),
        ),
      )
      // No key: the link is signed (modules/task/links.ts).
      .get(`${p}/image/:id`, (c: Ctx) =>
        mjAnswer(() => mjImage(deps, decodeOr400(c.params.id!), String(c.query.sig ?? ""))),
      )
      // The upstream's callback: signed per channel instead of a key.
      .post(
        `${p}/notify`,
        (c: Ctx) =>
          mjAnswer(() => mjNotify(deps, String(c.query.channel ?? ""), String(c.query.sig ?? ""), bodyOf(c.body))),
        json,
      );
  }

  return (app as Elysia)
    .post(
      "/suno/submit/:action",
      (c: any) =>
        sunoAnswer(async () => {
          const { caller: who, ip } = await caller(c.request, c.server);
          return sunoSubmit(deps, decodeOr400(c.params.action), bodyOf(c.body), who, ip);
        }),
      json,
    )
    .post(
      "/suno/fetch",
      (c: any) =>
        sunoAnswer(async () => sunoFetchMany(deps, (await caller(c.request, c.server)).caller, bodyOf(c.body))),
      json,
    )
    .get("/suno/fetch/:id", (c: any) =>
      sunoAnswer(async () => sunoFetchOne(deps, (await caller(c.request, c.server)).caller, decodeOr400(c.params.id))),
    )
    .post(
      "/v1/videos",
      async ({ request, server, body }: any) => {
        const { caller: who, ip } = await caller(request, server);
        return videoSubmit(deps, body instanceof FormData ? body : parseJsonObject(body), who, ip);
      },
      { parse: videoBody(limit) },
    )
    .get("/v1/videos/:id", async ({ request, server, params }: any) =>
      videoGet(deps, (await caller(request, server)).caller, decodeOr400(params.id)),
    )
    .get("/v1/videos/:id/content", async ({ request, server, params }: any) => {
      const { caller: who } = await caller(request, server);
      return videoContent(deps, who, decodeOr400(params.id), new URL(request.url).search);
    });
}

/** A video request is JSON, or multipart when it carries a reference image; both within the body limit. */
function videoBody(limit: number) {
  return async ({ request }: { request: Request }) => {
    if ((request.headers.get("content-type") ?? "").includes("multipart/form-data")) {
      if (Number(request.headers.get("content-length") ?? 0) > limit)
        throw new AppError(413, `request body too large (limit ${limit} bytes)`, "request_too_large");
      return request.formData().catch(() => {
        throw new AppError(400, "malformed multipart body");
      });
    }
    return readBodyText(request, limit);
  };
}
