import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authPlugin } from "../../http/auth.ts";
import { ok, paging } from "../../http/envelope.ts";
import { pageOf } from "../../http/schema.ts";
import { AppError } from "../../http/errors.ts";
import { ROLE } from "../../catalogue/index.ts";
import * as svc from "./service.ts";
import * as m from "./model.ts";
import { topupInfo } from "./topup-info.ts";

/** Provider callbacks answer in plain text, as the providers expect ("success" / "fail"). */
async function noticeReply(run: () => Promise<string>): Promise<Response> {
  try {
    return new Response(await run(), { headers: { "content-type": "text/plain; charset=utf-8" } });
  } catch (e) {
    if (!(e instanceof AppError)) throw e;
    return new Response("fail", { status: e.status, headers: { "content-type": "text/plain; charset=utf-8" } });
  }
}

/** Query parameters plus, for a form POST, the (already parsed) form fields. */
function noticeParams(request: Request, body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URL(request.url).searchParams) out[k] = v;
  if (body && typeof body === "object")
    for (const [k, v] of Object.entries(body)) if (typeof v === "string") out[k] = v;
  return out;
}

const topupPage = pageOf(m.topupRow);

export function walletModule(deps: AppDeps) {
  return (
    new Elysia({ prefix: "/api/user", tags: ["wallet"] })
      .use(authPlugin(deps))
      // new-api's consoles: the caller's top-up history, and every user's for an admin
      .get(
        "/topup/self",
        async ({ user, query }) =>
          ok(await svc.listTopUps(deps, { ...paging(query), keyword: query.keyword, userId: user.id })),
        {
          role: ROLE.common,
          query: m.topupListQuery,
          detail: { summary: "The caller's top-ups (one page, newest first)" },
          response: topupPage,
        },
      )
      .get(
        "/topup",
        async ({ query }) => ok(await svc.listTopUps(deps, { ...paging(query), keyword: query.keyword })),
        {
          role: ROLE.admin,
          query: m.topupListQuery,
          detail: { summary: "Every user's top-ups (one page, newest first)" },
          response: topupPage,
        },
      )
      .get("/topup/info", () => ok(topupInfo(deps)), {
        role: ROLE.common,
        detail: { summary: "Top-up options (amounts, payment methods, prices)" },
        response: m.topupInfoReply,
      })
      .post("/amount", ({ user, body }) => ok(svc.quoteAmount(deps, user, body.amount).toFixed(2)), {
        role: ROLE.common,
        body: m.amountBody,
        detail: { summary: "The price of a top-up amount" },
        response: m.amountReply,
      })
      .post(
        "/pay",
        async ({ user, body }) => {
          const { url, data } = await svc.startPayment(deps, user, body.amount, body.payment_method);
          return { ...ok(data, "success"), url };
        },
        { role: ROLE.common, body: m.payBody, detail: { summary: "Start an online payment" }, response: m.payReply },
      )
      // Epay calls back with GET; some deployments POST a form. Both carry the same signed fields.
      .get(
        "/epay/notify",
        ({ request }) => noticeReply(() => svc.handleNotice(deps, "epay", noticeParams(request, null))),
        {
          query: m.noticeQuery,
          detail: { summary: "Epay's payment notice (GET)" },
          response: m.noticeReply,
        },
      )
      .post(
        "/epay/notify",
        ({ request, body }) => noticeReply(() => svc.handleNotice(deps, "epay", noticeParams(request, body))),
        {
          query: m.noticeQuery,
          body: m.noticeForm,
          response: m.noticeReply,
          detail: { summary: "Epay's payment notice (form POST)", "x-form-body": true },
        },
      )
  );
}
