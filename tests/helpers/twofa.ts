// Signing in through the two-step password login (tests of two-factor sign-in, passkeys and key views).
import type { Session, TestContext } from "./app.ts";

export interface RawReply {
  status: number;
  body: any;
  cookies: string[];
}

/** A JSON POST through app.handle, keeping every Set-Cookie (ctx.request keeps none). */
export async function rawPost(ctx: TestContext, path: string, body: unknown, cookie?: string): Promise<RawReply> {
  const res = await ctx.app.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
      body: JSON.stringify(body),
    }),
  );
  return { status: res.status, body: await res.json(), cookies: res.headers.getSetCookie() };
}

export const cookieNamed = (cookies: string[], name: string) =>
  cookies.find((c) => c.startsWith(`${name}=`))?.split(";")[0];

/** The session a successful sign-in reply (data = the user, Set-Cookie session) opened. */
export function sessionOf(reply: RawReply, username: string, password = ""): Session {
  const cookie = cookieNamed(reply.cookies, "session");
  if (!reply.body.success || !cookie) throw new Error(`no session: ${reply.body.message}`);
  return {
    id: reply.body.data.id,
    username,
    password,
    cookie,
    headers: { cookie, "New-Api-User": String(reply.body.data.id) },
  };
}

/** Password, then the second factor's code: the session of a user with two-factor sign-in on. */
export async function signInWithCode(
  ctx: TestContext,
  username: string,
  password: string,
  code: string,
): Promise<Session> {
  const first = await rawPost(ctx, "/api/user/login", { username, password });
  if (!first.body.data?.require_2fa) throw new Error(`expected require_2fa: ${JSON.stringify(first.body)}`);
  return sessionOf(
    await rawPost(ctx, "/api/user/login/2fa", { flow_token: first.body.data.flow_token, code }),
    username,
    password,
  );
}
