// A small SMTP client (RFC 5321) over node:net / node:tls as Bun implements them: implicit TLS when
// SMTPSSLEnabled is on or the port is 465, STARTTLS whenever the server offers it, AUTH PLAIN or LOGIN.
// Credentials are never sent over an unencrypted connection except to a loopback server.
import { connect as tcpConnect, isIP, type Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from "node:tls";
import { hostname } from "node:os";
import type { AppDeps } from "../deps.ts";

export interface SmtpSettings {
  host: string;
  port: number;
  /** Implicit TLS from the first byte (SMTPS). */
  secure: boolean;
  account: string;
  token: string;
  from: string;
}

export interface MailMessage {
  to: string;
  subject: string;
  html: string;
}

export interface SendOptions {
  timeoutMs?: number;
  /** Extra TLS options (tests pass a self-signed CA here). */
  tls?: ConnectionOptions;
}

export class MailError extends Error {}

/** SMTP settings from the site options; null when no SMTP server is configured. */
export function smtpSettings(deps: AppDeps): SmtpSettings | null {
  const o = deps.options;
  const host = o.get("SMTPServer").trim();
  if (!host) return null;
  const port = o.number("SMTPPort", 587);
  const account = o.get("SMTPAccount").trim();
  return {
    host, port, secure: o.bool("SMTPSSLEnabled") || port === 465, account, token: o.get("SMTPToken"),
    from: o.get("SMTPFrom").trim() || account,
  };
}

const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\./.test(host);

/** Credentials go only over TLS, or to a server on this machine (a local relay, tests). */
export const mayAuthenticate = (encrypted: boolean, host: string) => encrypted || isLoopback(host);

/** SNI must be a name; for an IP address the certificate is checked against the IP instead. */
const sni = (host: string) => (isIP(host) ? {} : { servername: host });

/** RFC 2047 encoded word, so subjects in any language survive 7-bit transport. */
function encodeHeader(text: string): string {
  return /^[\x20-\x7e]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`;
}

function wrap76(b64: string): string {
  return b64.replace(/.{1,76}/g, "$&\r\n");
}

/** Addresses go into SMTP commands and headers: a line break (or any control character) would add lines. */
function cleanAddress(addr: string): string {
  const a = addr.trim();
  if (!a || /[\x00-\x1f\x7f<>]/.test(a)) throw new MailError(`invalid mail address: ${JSON.stringify(addr)}`);
  return a;
}

export function buildMessage(rawFrom: string, msg: MailMessage, now = new Date()): string {
  const from = cleanAddress(rawFrom);
  const domain = from.split("@")[1] || "localhost";
  const headers = [
    `From: ${from}`,
    `To: ${cleanAddress(msg.to)}`,
    // Subjects carry site names and titles: control characters (CR/LF above all) become spaces.
    `Subject: ${encodeHeader(msg.subject.replace(/[\x00-\x1f\x7f]+/g, " "))}`,
    `Date: ${now.toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: <${crypto.randomUUID()}@${domain}>`,
    "MIME-Version: 1.0",
    "Content-Type: text/html; charset=UTF-8",
    "Content-Transfer-Encoding: base64",
  ];
  return headers.join("\r\n") + "\r\n\r\n" + wrap76(Buffer.from(msg.html, "utf8").toString("base64"));
}

interface Reply { code: number; lines: string[] }

/** Reads complete SMTP replies (possibly multi-line "250-...") from whichever socket is current. */
class ReplyReader {
  private buf = "";
  private lines: string[] = [];
  private ready: Reply[] = [];
  private waiter: { resolve: (r: Reply) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;

  attach(sock: Socket | TLSSocket) {
    sock.on("data", (chunk: Buffer) => this.push(chunk.toString("utf8")));
    sock.on("error", (e: Error) => this.fail(new MailError(`SMTP connection error: ${e.message}`)));
    sock.on("close", () => this.fail(new MailError("SMTP connection closed by the server")));
  }

  detach(sock: Socket | TLSSocket) {
    sock.removeAllListeners("data");
    sock.removeAllListeners("error");
    sock.removeAllListeners("close");
  }

  private push(text: string) {
    this.buf += text;
    let i: number;
    while ((i = this.buf.indexOf("\r\n")) >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 2);
      this.lines.push(line);
      if (/^\d{3}(?: |$)/.test(line)) {
        const reply = { code: Number(line.slice(0, 3)), lines: this.lines.map((l) => l.slice(4)) };
        this.lines = [];
        if (this.waiter) {
          const w = this.waiter;
          this.waiter = null;
          w.resolve(reply);
        } else this.ready.push(reply);
      }
    }
  }

  fail(e: Error) {
    this.failure ??= e;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.reject(e);
    }
  }

  next(): Promise<Reply> {
    const r = this.ready.shift();
    if (r) return Promise.resolve(r);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }
}

function open(settings: SmtpSettings, tls: ConnectionOptions | undefined): Promise<Socket | TLSSocket> {
  return new Promise((resolve, reject) => {
    const sock = settings.secure
      ? tlsConnect({ host: settings.host, port: settings.port, ...sni(settings.host), ...tls }, () => resolve(sock))
      : tcpConnect({ host: settings.host, port: settings.port }, () => resolve(sock));
    sock.once("error", (e) => reject(new MailError(`cannot connect to SMTP server ${settings.host}:${settings.port}: ${e.message}`)));
  });
}

function upgrade(sock: Socket, host: string, tls: ConnectionOptions | undefined): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const secured = tlsConnect({ socket: sock, ...sni(host), ...tls }, () => resolve(secured));
    secured.once("error", (e) => reject(new MailError(`STARTTLS failed: ${e.message}`)));
  });
}

/** Sends one message; resolves when the server accepted it for delivery. */
export async function sendMail(settings: SmtpSettings, msg: MailMessage, opts: SendOptions = {}): Promise<void> {
  const to = cleanAddress(msg.to);
  const from = cleanAddress(settings.from);
  let sock = await open(settings, opts.tls);
  let encrypted = settings.secure;
  const reader = new ReplyReader();
  reader.attach(sock);
  const timer = setTimeout(() => {
    reader.fail(new MailError("SMTP server timed out"));
    sock.destroy();
  }, opts.timeoutMs ?? 30_000);

  const expect = async (ok: number[], what: string) => {
    const r = await reader.next();
    if (!ok.includes(r.code)) throw new MailError(`SMTP ${what} failed: ${r.code} ${r.lines.join(" ")}`);
    return r;
  };
  const cmd = (line: string) => sock.write(line + "\r\n");
  const ehlo = async () => {
    cmd(`EHLO ${hostname() || "localhost"}`);
    const r = await expect([250], "EHLO");
    return r.lines.slice(1).map((l) => l.toUpperCase());
  };

  try {
    await expect([220], "greeting");
    let caps = await ehlo();
    if (!encrypted && caps.some((c) => c === "STARTTLS")) {
      cmd("STARTTLS");
      await expect([220], "STARTTLS");
      reader.detach(sock);
      sock = await upgrade(sock as Socket, settings.host, opts.tls);
      reader.attach(sock);
      encrypted = true;
      caps = await ehlo();
    }
    if (settings.account) {
      if (!mayAuthenticate(encrypted, settings.host)) throw new MailError("the SMTP server offers no encryption; refusing to send the password in clear text");
      const auth = caps.find((c) => c.startsWith("AUTH")) ?? "";
      if (/\bPLAIN\b/.test(auth) || !/\bLOGIN\b/.test(auth)) {
        cmd(`AUTH PLAIN ${Buffer.from(`\0${settings.account}\0${settings.token}`, "utf8").toString("base64")}`);
        await expect([235], "authentication");
      } else {
        cmd("AUTH LOGIN");
        await expect([334], "authentication");
        cmd(Buffer.from(settings.account, "utf8").toString("base64"));
        await expect([334], "authentication");
        cmd(Buffer.from(settings.token, "utf8").toString("base64"));
        await expect([235], "authentication");
      }
    }
    cmd(`MAIL FROM:<${from}>`);
    await expect([250], "MAIL FROM");
    cmd(`RCPT TO:<${to}>`);
    await expect([250, 251], "RCPT TO");
    cmd("DATA");
    await expect([354], "DATA");
    // Dot-stuffing: a line starting with "." gets another "." (the body is base64, the headers are not).
    const data = buildMessage(from, { ...msg, to }).replace(/\r\n\./g, "\r\n..");
    sock.write(data + "\r\n.\r\n");
    await expect([250], "message");
    cmd("QUIT");
    await reader.next().catch(() => undefined);
  } finally {
    clearTimeout(timer);
    reader.detach(sock);
    sock.on("error", () => {});
    sock.end();
  }
}

/** For site texts (names, addresses) placed into an HTML mail body. */
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Sends with the site's SMTP options; throws MailError when SMTP is not configured. */
export async function sendSiteMail(deps: AppDeps, msg: MailMessage, opts?: SendOptions): Promise<void> {
  const s = smtpSettings(deps);
  if (!s) throw new MailError("SMTP is not configured");
  await sendMail(s, msg, opts);
}
