import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type Socket } from "node:net";
import { TLSSocket } from "node:tls";
import { testContext, type TestContext } from "../helpers/app.ts";
import { checkQuota, maybeNotifyQuota, sendToRoot, webhookAllowed } from "../../server/infra/notify.ts";
import { createTransport } from "nodemailer";
import {
  sendMail,
  buildMessage,
  mailError,
  mayAuthenticate,
  transportOptions,
  type SmtpSettings,
} from "../../server/infra/mail.ts";
import { parseMail, unfold } from "../mocks/mime.ts";
import { allowLocalFetches } from "../helpers/outbound.ts";

// ---- a local webhook receiver -------------------------------------------------------------------------
interface Hook {
  headers: Headers;
  body: any;
}
function webhookReceiver(delayMs = 0) {
  const hits: Hook[] = [];
  /** Requests that reached the receiver, answered or not yet. */
  let arrived = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      arrived++;
      const body = await req.json();
      if (delayMs) await Bun.sleep(delayMs);
      hits.push({ headers: req.headers, body });
      return new Response("ok");
    },
  });
  return { hits, arrived: () => arrived, url: `http://127.0.0.1:${server.port}/hook`, stop: () => server.stop(true) };
}

// ---- a local SMTP server (plain or implicit TLS) -----------------------------------------------------------
interface Received {
  auth: string[];
  from: string;
  to: string;
  data: string;
  commands: string[];
}
function smtpServer(
  opts: { authMechs?: string; tls?: { key: string; cert: string }; user?: string; pass?: string } = {},
) {
  const mails: Received[] = [];
  /** Every command verb of every connection, in order. */
  const log: string[] = [];
  const user = opts.user ?? "mailer@example.com";
  const pass = opts.pass ?? "app-password";
  type State = { buf: string; mode: "cmd" | "data" | "login-user" | "login-pass"; cur: Received; loginUser?: string };
  const server = Bun.listen<State>({
    hostname: "127.0.0.1",
    port: 0,
    ...(opts.tls ? { tls: opts.tls } : {}),
    socket: {
      open(s) {
        s.data = { buf: "", mode: "cmd", cur: { auth: [], from: "", to: "", data: "", commands: [] } };
        s.write("220 mock ESMTP\r\n");
      },
      data(s, chunk) {
        const st = s.data;
        st.buf += chunk.toString();
        let i: number;
        while ((i = st.buf.indexOf("\r\n")) >= 0) {
          const line = st.buf.slice(0, i);
          st.buf = st.buf.slice(i + 2);
          if (st.mode === "data") {
            if (line === ".") {
              st.mode = "cmd";
              mails.push(st.cur);
              st.cur = { auth: [...st.cur.auth], from: "", to: "", data: "", commands: st.cur.commands };
              s.write("250 queued\r\n");
            } else st.cur.data += line + "\r\n";
            continue;
          }
          if (st.mode === "login-user") {
            st.loginUser = Buffer.from(line, "base64").toString();
            st.mode = "login-pass";
            s.write("334 UGFzc3dvcmQ6\r\n");
            continue;
          }
          if (st.mode === "login-pass") {
            st.mode = "cmd";
            const ok = st.loginUser === user && Buffer.from(line, "base64").toString() === pass;
            st.cur.auth.push(`LOGIN ${st.loginUser}`);
            s.write(ok ? "235 ok\r\n" : "535 bad credentials\r\n");
            continue;
          }
          st.cur.commands.push(line.split(" ")[0].toUpperCase());
          log.push(line.split(" ")[0].toUpperCase());
          const upper = line.toUpperCase();
          if (upper.startsWith("EHLO"))
            s.write(`250-mock greets you\r\n250-SIZE 1000000\r\n250 AUTH ${opts.authMechs ?? "PLAIN LOGIN"}\r\n`);
          else if (upper.startsWith("AUTH PLAIN ")) {
            const [, u, p] = Buffer.from(line.slice(11), "base64").toString().split("\0");
            st.cur.auth.push(`PLAIN ${u}`);
            s.write(u === user && p === pass ? "235 ok\r\n" : "535 bad credentials\r\n");
          } else if (upper === "AUTH LOGIN") {
            st.mode = "login-user";
            s.write("334 VXNlcm5hbWU6\r\n");
          } else if (upper.startsWith("MAIL FROM:")) {
            st.cur.from = line.slice(10);
            s.write("250 ok\r\n");
          } else if (upper.startsWith("RCPT TO:")) {
            st.cur.to = line.slice(8);
            s.write("250 ok\r\n");
          } else if (upper === "DATA") {
            st.mode = "data";
            s.write("354 go ahead\r\n");
          } else if (upper === "QUIT") {
            s.write("221 bye\r\n");
            s.end();
          } else s.write("502 unknown\r\n");
        }
      },
    },
  });
  return { mails, log, port: server.port, stop: () => server.stop(true) };
}

/** A throwaway self-signed certificate for localhost / 127.0.0.1 (openssl is part of the test image). */
function selfSigned(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), "sy-smtp-"));
  const proc = Bun.spawnSync([
    "openssl",
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    join(dir, "key.pem"),
    "-out",
    join(dir, "cert.pem"),
    "-days",
    "1",
    "-subj",
    "/CN=localhost",
    "-addext",
    "subjectAltName=DNS:localhost,IP:127.0.0.1",
  ]);
  if (proc.exitCode !== 0) throw new Error("openssl failed: " + proc.stderr.toString());
  return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
}

/** A plain SMTP server that offers STARTTLS and only offers AUTH after the upgrade; logs each command. */
function startTlsServer(pem: { key: string; cert: string }) {
  const log: string[] = [];
  const server = createServer((raw) => {
    let sock: Socket | TLSSocket = raw;
    let buf = "";
    let inData = false;
    const handler = (chunk: Buffer) => {
      buf += chunk.toString();
      let i: number;
      while ((i = buf.indexOf("\r\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (inData) {
          if (line === ".") {
            inData = false;
            sock.write("250 ok\r\n");
          }
          continue;
        }
        const secure = sock instanceof TLSSocket;
        log.push(`${secure ? "tls" : "plain"}:${line.split(" ")[0].toUpperCase()}`);
        const u = line.toUpperCase();
        if (u.startsWith("EHLO"))
          sock.write(secure ? "250-mock\r\n250 AUTH PLAIN\r\n" : "250-mock\r\n250 STARTTLS\r\n");
        else if (u === "STARTTLS") {
          sock.write("220 ready\r\n");
          raw.removeListener("data", handler);
          sock = new TLSSocket(raw, { isServer: true, key: pem.key, cert: pem.cert });
          sock.on("data", handler);
        } else if (u.startsWith("AUTH")) sock.write(secure ? "235 ok\r\n" : "530 encryption required\r\n");
        else if (u === "DATA") {
          inData = true;
          sock.write("354 go\r\n");
        } else if (u === "QUIT") {
          sock.write("221 bye\r\n");
          sock.end();
        } else sock.write("250 ok\r\n");
      }
    };
    raw.on("data", handler);
    raw.write("220 mock\r\n");
  });
  const ready = new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as any).port)),
  );
  return { log, ready, stop: () => server.close() };
}

/** The DATA as a mail client reads it (dot-stuffing undone): header fields, decoded subject and body. */
function decodeBody(data: string) {
  const mail = parseMail(data.replace(/^\.\./gm, "."));
  return { mail, headers: unfold(data.slice(0, data.indexOf("\r\n\r\n"))).join("\r\n"), html: mail.body };
}

describe("webhook address rule", () => {
  test("https only; loopback http only with the test flag", async () => {
    const ctx = await testContext({});
    try {
      expect(webhookAllowed(ctx.deps, "https://hooks.example.com/x")).not.toBeNull();
      expect(webhookAllowed(ctx.deps, "http://127.0.0.1:9/x")).toBeNull();
      expect(webhookAllowed(ctx.deps, "http://hooks.example.com/x")).toBeNull();
      expect(webhookAllowed(ctx.deps, "not a url")).toBeNull();
      ctx.deps.config.allowLoopbackWebhooks = true;
      expect(webhookAllowed(ctx.deps, "http://127.0.0.1:9/x")).not.toBeNull();
      expect(webhookAllowed(ctx.deps, "http://hooks.example.com/x")).toBeNull();
      expect(webhookAllowed(ctx.deps, "ftp://127.0.0.1/x")).toBeNull();
    } finally {
      await ctx.close();
    }
  });
});

describe("quota notifications by webhook", () => {
  let ctx: TestContext;
  let hook: ReturnType<typeof webhookReceiver>;
  const mkUser = async (setting: Record<string, unknown>, quota = 0) => {
    const s = await ctx.user(1, { setting: JSON.stringify(setting), quota });
    return s.id;
  };
  beforeAll(async () => {
    ctx = await testContext({ config: { allowLoopbackWebhooks: true } });
    await allowLocalFetches(ctx.deps.options);
    hook = webhookReceiver();
  });
  afterAll(async () => {
    hook.stop();
    await ctx.close();
  });

  test("below the user's threshold: one webhook with type, title, content, values, timestamp and the Bearer secret", async () => {
    const id = await mkUser({
      notify_type: "webhook",
      webhook_url: hook.url,
      webhook_secret: "s3cret",
      quota_warning_threshold: 1_000_000,
    });
    const before = Math.floor(Date.now() / 1000);
    expect(await checkQuota(ctx.deps, id, 250_000)).toBe("sent");
    expect(hook.hits).toHaveLength(1);
    const { headers, body } = hook.hits[0];
    expect(headers.get("authorization")).toBe("Bearer s3cret");
    expect(headers.get("content-type")).toContain("application/json");
    expect(Object.keys(body).sort()).toEqual(["content", "timestamp", "title", "type", "values"]);
    expect(body.type).toBe("quota_exceed");
    expect(body.values).toEqual(["$0.50", "$2.00"]);
    expect(body.content.match(/\{\{value\}\}/g)).toHaveLength(2);
    expect(body.timestamp).toBeGreaterThanOrEqual(before);
  });

  test("at most once per 2 hours per user; other users are independent", async () => {
    const a = await mkUser({ notify_type: "webhook", webhook_url: hook.url, quota_warning_threshold: 100 });
    const b = await mkUser({ notify_type: "webhook", webhook_url: hook.url, quota_warning_threshold: 100 });
    const start = hook.hits.length;
    expect(await checkQuota(ctx.deps, a, 10)).toBe("sent");
    expect(await checkQuota(ctx.deps, a, 5)).toBe("throttled");
    expect(await checkQuota(ctx.deps, a, 0)).toBe("throttled");
    expect(await checkQuota(ctx.deps, b, 1)).toBe("sent");
    expect(hook.hits.length - start).toBe(2);
    expect(hook.hits.at(-1)!.headers.get("authorization")).toBeNull();
    // the throttle key lives for two hours
    await ctx.deps.cache.del(`notify:quota:${a}`);
    expect(await checkQuota(ctx.deps, a, 0)).toBe("sent");
  });

  test("at or above the threshold nothing is sent and the throttle is not used up", async () => {
    const id = await mkUser({ notify_type: "webhook", webhook_url: hook.url, quota_warning_threshold: 500 });
    const start = hook.hits.length;
    expect(await checkQuota(ctx.deps, id, 500)).toBe("above-threshold");
    expect(await checkQuota(ctx.deps, id, 499)).toBe("sent");
    expect(hook.hits.length - start).toBe(1);
  });

  test("without a personal threshold QuotaRemindThreshold applies", async () => {
    await ctx.deps.options.set("QuotaRemindThreshold", "3000");
    const id = await mkUser({ notify_type: "webhook", webhook_url: hook.url });
    expect(await checkQuota(ctx.deps, id, 3000)).toBe("above-threshold");
    expect(await checkQuota(ctx.deps, id, 2999)).toBe("sent");
    expect(hook.hits.at(-1)!.body.values).toEqual(["$0.01", "$0.01"]);
  });

  test("an http webhook outside the test flag is never called", async () => {
    ctx.deps.config.allowLoopbackWebhooks = false;
    try {
      const id = await mkUser({ notify_type: "webhook", webhook_url: hook.url, quota_warning_threshold: 100 });
      const start = hook.hits.length;
      expect(await checkQuota(ctx.deps, id, 1)).toBe("no-recipient");
      expect(hook.hits.length).toBe(start);
    } finally {
      ctx.deps.config.allowLoopbackWebhooks = true;
    }
  });

  test("maybeNotifyQuota returns at once even when the receiver is slow, and delivers in the background", async () => {
    const slow = webhookReceiver(300);
    try {
      const id = await mkUser({ notify_type: "webhook", webhook_url: slow.url, quota_warning_threshold: 100 });
      // It returns nothing to wait for, before the notice has even left: the receiver has seen no request yet.
      expect(maybeNotifyQuota(ctx.deps, id, 1)).toBeUndefined();
      expect(slow.arrived()).toBe(0);
      expect(slow.hits).toHaveLength(0);
      for (let i = 0; i < 100 && slow.hits.length === 0; i++) await Bun.sleep(20);
      expect(slow.hits).toHaveLength(1);
      // a failing target never throws into the caller
      const gone = await mkUser({
        notify_type: "webhook",
        webhook_url: "http://127.0.0.1:1/none",
        quota_warning_threshold: 100,
      });
      expect(() => maybeNotifyQuota(ctx.deps, gone, 1)).not.toThrow();
      expect(() => maybeNotifyQuota(ctx.deps, 999999, 1)).not.toThrow();
      await Bun.sleep(50);
    } finally {
      slow.stop();
    }
  });
});

describe("quota notifications and root messages by email", () => {
  let ctx: TestContext;
  let smtp: ReturnType<typeof smtpServer>;
  beforeAll(async () => {
    ctx = await testContext({});
    smtp = smtpServer();
    await ctx.deps.options.set("SMTPServer", "127.0.0.1");
    await ctx.deps.options.set("SMTPPort", String(smtp.port));
    await ctx.deps.options.set("SMTPAccount", "mailer@example.com");
    await ctx.deps.options.set("SMTPToken", "app-password");
    await ctx.deps.options.set("SMTPFrom", "noreply@example.com");
    await ctx.deps.options.set("SystemName", "Yard");
  });
  afterAll(async () => {
    smtp.stop();
    await ctx.close();
  });

  test("email goes to notification_email (else the account email) through SMTP with AUTH", async () => {
    const s = await ctx.user(1, {
      email: "acct@example.com",
      setting: JSON.stringify({
        notify_type: "email",
        notification_email: "alerts@example.com",
        quota_warning_threshold: 1000,
      }),
    });
    expect(await checkQuota(ctx.deps, s.id, 10)).toBe("sent");
    const m = smtp.mails.at(-1)!;
    expect(m.auth).toEqual(["PLAIN mailer@example.com"]);
    expect(m.from).toBe("<noreply@example.com>");
    expect(m.to).toBe("<alerts@example.com>");
    const { mail, headers, html } = decodeBody(m.data);
    expect(mail.subject).toBe("Yard: Your quota is running low");
    expect(mail.from).toEqual({ name: "Yard", address: "noreply@example.com" });
    expect(headers).toContain("To: alerts@example.com");
    expect(html).toContain("Your remaining quota is $0.00");
    expect(await checkQuota(ctx.deps, s.id, 5)).toBe("throttled");
    const plain = await ctx.user(1, {
      email: "acct2@example.com",
      setting: JSON.stringify({ quota_warning_threshold: 1000 }),
    });
    expect(await checkQuota(ctx.deps, plain.id, 10)).toBe("sent");
    expect(smtp.mails.at(-1)!.to).toBe("<acct2@example.com>");
    const nobody = await ctx.user(1, { email: "", setting: JSON.stringify({ quota_warning_threshold: 1000 }) });
    expect(await checkQuota(ctx.deps, nobody.id, 10)).toBe("no-recipient");
  });

  test("notifyRoot reaches the super admin by the super admin's setting", async () => {
    await ctx.deps.db.updateTable("users").set({ email: "root@example.com" }).where("username", "=", "root").execute();
    expect(
      await sendToRoot(ctx.deps, {
        title: "Channel disabled",
        content: "Channel {{value}} was disabled automatically",
        values: ["#7"],
      }),
    ).toBe("sent");
    const m = smtp.mails.at(-1)!;
    expect(m.to).toBe("<root@example.com>");
    expect(decodeBody(m.data).html).toContain("Channel #7 was disabled automatically");
  });
});

describe("SMTP client", () => {
  const settings = (port: number, over: Partial<SmtpSettings> = {}): SmtpSettings => ({
    host: "127.0.0.1",
    port,
    secure: false,
    account: "mailer@example.com",
    token: "app-password",
    from: "noreply@example.com",
    ...over,
  });

  test("AUTH LOGIN when the server offers only LOGIN; non-ASCII subjects are encoded", async () => {
    const smtp = smtpServer({ authMechs: "LOGIN" });
    try {
      await sendMail(settings(smtp.port), { to: "a@example.com", subject: "额度提醒", html: "<b>hi</b>" });
      expect(smtp.mails[0].auth).toEqual(["LOGIN mailer@example.com"]);
      const { mail, headers, html } = decodeBody(smtp.mails[0].data);
      // Encoded words in a 7-bit header block (the server announced no SMTPUTF8), the text intact after decoding.
      expect(headers).toMatch(/^Subject: =\?UTF-8\?[BQ]\?/im);
      expect(/^[\x00-\x7f]*$/.test(headers)).toBe(true);
      expect(mail.subject).toBe("额度提醒");
      expect(html).toBe("<b>hi</b>");
    } finally {
      smtp.stop();
    }
  });

  test("wrong credentials and refused connections are reported as errors", async () => {
    const smtp = smtpServer();
    try {
      await expect(
        sendMail(settings(smtp.port, { token: "wrong" }), { to: "a@example.com", subject: "x", html: "x" }),
      ).rejects.toThrow(/authentication failed: 535/);
      expect(smtp.mails).toHaveLength(0);
    } finally {
      smtp.stop();
    }
    await expect(sendMail(settings(1), { to: "a@example.com", subject: "x", html: "x" })).rejects.toThrow(
      /cannot connect/,
    );
    await expect(
      sendMail(settings(1), { to: "a@example.com>\r\nRCPT TO:<b@x", subject: "x", html: "x" }),
    ).rejects.toThrow(/invalid mail address/);
  });

  test("a password is only sent encrypted or to a loopback server", () => {
    expect(mayAuthenticate(true, "smtp.example.com")).toBe(true);
    expect(mayAuthenticate(false, "smtp.example.com")).toBe(false);
    expect(mayAuthenticate(false, "10.0.0.5")).toBe(false);
    expect(mayAuthenticate(false, "127.0.0.1")).toBe(true);
    expect(mayAuthenticate(false, "localhost")).toBe(true);
  });

  test("implicit TLS (SMTPS) with a self-signed certificate", async () => {
    const { key, cert } = selfSigned();
    const smtp = smtpServer({ tls: { key, cert } });
    try {
      await sendMail(
        settings(smtp.port, { secure: true }),
        { to: "tls@example.com", subject: "over tls", html: "secure" },
        { tls: { ca: cert } },
      );
      expect(smtp.mails[0].to).toBe("<tls@example.com>");
      expect(decodeBody(smtp.mails[0].data).html).toBe("secure");
      expect(smtp.mails[0].auth).toEqual(["PLAIN mailer@example.com"]);
      // an untrusted certificate is refused
      await expect(
        sendMail(settings(smtp.port, { secure: true }), { to: "tls@example.com", subject: "x", html: "x" }),
      ).rejects.toThrow();
    } finally {
      smtp.stop();
    }
  });

  test("STARTTLS when the server offers it; credentials only after the upgrade", async () => {
    const pem = selfSigned();
    const srv = startTlsServer(pem);
    try {
      const port = await srv.ready;
      await sendMail(
        settings(port, { host: "localhost" }),
        { to: "t@example.com", subject: "s", html: "h" },
        { tls: { ca: pem.cert } },
      );
      // nodemailer closes the connection once the message is accepted (no QUIT).
      expect(srv.log).toEqual([
        "plain:EHLO",
        "plain:STARTTLS",
        "tls:EHLO",
        "tls:AUTH",
        "tls:MAIL",
        "tls:RCPT",
        "tls:DATA",
      ]);
    } finally {
      srv.stop();
    }
  });

  test("to a server elsewhere, the password waits for STARTTLS: a server without it gets none", async () => {
    const smtp = smtpServer();
    try {
      const remote = settings(smtp.port, { host: "smtp.example.com" });
      expect(transportOptions(remote).requireTLS).toBe(true);
      expect(transportOptions(settings(smtp.port)).requireTLS).toBe(false); // loopback
      expect(transportOptions({ ...remote, secure: true }).requireTLS).toBe(false); // TLS from the first byte
      expect(transportOptions({ ...remote, account: "" }).requireTLS).toBe(false); // no password to protect
      // The options computed for the remote server, pointed at this plain one (it answers STARTTLS with 502).
      const transport = createTransport({ ...transportOptions(remote), host: "127.0.0.1" });
      const err = await transport
        .sendMail({ from: "noreply@example.com", to: "a@example.com", subject: "x", html: "x" })
        .then(
          () => null,
          (e) => e,
        );
      transport.close();
      expect(mailError(err, remote).message).toMatch(
        /^the SMTP server offers no encryption; refusing to send the password in clear text/,
      );
      expect(smtp.log).toEqual(["EHLO", "STARTTLS"]);
      expect(smtp.mails).toHaveLength(0);
    } finally {
      smtp.stop();
    }
  });

  test("message format: Date, ASCII header lines within 78 columns, a body that decodes back", async () => {
    const html = "<p>" + "x".repeat(200) + " Ünïcødé 你好 Привет</p>";
    const raw = await buildMessage(
      "noreply@example.com",
      { to: "a@example.com", subject: "Hi", html },
      { date: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)) },
    );
    expect(raw).toContain("Date: Fri, 02 Jan 2026 03:04:05 +0000");
    expect(raw).toMatch(/^Content-Transfer-Encoding: (base64|quoted-printable)$/m);
    for (const line of raw.split("\r\n")) expect(line.length).toBeLessThanOrEqual(78);
    expect(/^[\x00-\x7f]*$/.test(raw)).toBe(true);
    expect(parseMail(raw).body).toBe(html);
  });
});

describe("throttle across instances", () => {
  // With REDIS_CONN_STRING set, two instances share Redis; without it, two deps share one memory cache.
  test("a warning sent by one instance is not repeated by another within 2 hours", async () => {
    const ctx = await testContext({ config: { allowLoopbackWebhooks: true }, redis: true });
    await allowLocalFetches(ctx.deps.options);
    const hook = webhookReceiver();
    try {
      const other = { ...ctx.deps }; // a second instance over the same database and cache
      const s = await ctx.user(1, {
        setting: JSON.stringify({ notify_type: "webhook", webhook_url: hook.url, quota_warning_threshold: 100 }),
      });
      expect(await checkQuota(ctx.deps, s.id, 1)).toBe("sent");
      expect(await checkQuota(other, s.id, 1)).toBe("throttled");
      expect(hook.hits).toHaveLength(1);
      expect(ctx.deps.cache.kind).toBe(process.env.REDIS_CONN_STRING ? "redis" : "memory");
    } finally {
      hook.stop();
      await ctx.close();
    }
  });
});
