// A test context whose site mails through a local SMTP receiver, set up once per test file.
import { afterAll, beforeAll } from "bun:test";
import { testContext, type TestContext } from "./app.ts";
import { smtpReceiver, useSmtp, type SmtpReceiver } from "../mocks/smtp-server.ts";

/** Registers the file's beforeAll/afterAll; `ready` receives the context and receiver once they exist. */
export function withMailContext(
  options: Record<string, string>,
  ready: (ctx: TestContext, smtp: SmtpReceiver) => void,
): void {
  let ctx: TestContext;
  let smtp: SmtpReceiver;
  beforeAll(async () => {
    ctx = await testContext();
    smtp = smtpReceiver();
    await useSmtp(ctx.deps.options, smtp);
    for (const [k, v] of Object.entries(options)) await ctx.deps.options.set(k, v);
    ready(ctx, smtp);
  });
  afterAll(async () => {
    smtp.stop();
    await ctx.close();
  });
}
