// Site mail through nodemailer: implicit TLS when SMTPSSLEnabled is on or the port is 465, STARTTLS
// whenever the server offers it, the AUTH mechanism the server prefers, RFC 2047 words for non-ASCII
// subjects and names, the body's transfer encoding chosen by nodemailer. Around it, the project's rules:
// credentials go over an unencrypted connection only to a loopback server (elsewhere STARTTLS is
// required); addresses with control characters or angle brackets are refused and control characters in
// subjects and names become spaces, so no caller adds a header line; failures are MailErrors worded for
// the operator's log (modules/verification/mails.ts turns them into 502/503 answers for the caller).
import type { ConnectionOptions } from "node:tls";
import type { AppDeps } from "../deps.ts";

export interface SmtpSettings {
  host: string;
  port: number;
  /** Implicit TLS from the first byte (SMTPS). */
  secure: boolean;
  account: string;
  token: string;
  from: string;
  /** Display name of the sender (the site's name, as one-api sends it); empty for a bare address. */
  fromName?: string;
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

// nodemailer is loaded with the first mail, not at start: evaluating it lengthens start-up and most processes
// never send one (hot-path rule 15).
const nodemailer = () => import("nodemailer");
const mailComposer = () => import("nodemailer/lib/mail-composer");

/** SMTP settings from the site options; null when no SMTP server is configured. */
export function smtpSettings(deps: AppDeps): SmtpSettings | null {
  const o = deps.options;
  const host = o.get("SMTPServer").trim();
  if (!host) return null;
  const port = o.number("SMTPPort", 587);
  const account = o.get("SMTPAccount").trim();
  return {
    host,
    port,
    secure: o.bool("SMTPSSLEnabled") || port === 465,
    account,
    token: o.get("SMTPToken"),
    from: o.get("SMTPFrom").trim() || account,
    fromName: o.get("SystemName").trim(),
  };
}

const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\./.test(host);

/** Credentials go only over TLS, or to a server on this machine (a local relay, tests). */
export const mayAuthenticate = (encrypted: boolean, host: string) => encrypted || isLoopback(host);

/**
 * One mailbox, nothing else: a line break (or any control character) would add lines to the SMTP dialogue
 * or the header block, angle brackets another address, and a comma or semicolon a second recipient.
 */
function cleanAddress(addr: string): string {
  const a = addr.trim();
  if (!/^[^\s\x00-\x1f\x7f<>,;@]+@[^\s\x00-\x1f\x7f<>,;@]+$/.test(a))
    throw new MailError(`invalid mail address: ${JSON.stringify(addr)}`);
  return a;
}

/** Subjects and names carry site names and titles: control characters (CR/LF above all) become spaces. */
const cleanText = (s: string) => s.replace(/[\x00-\x1f\x7f]+/g, " ").trim();

/** The message as nodemailer takes it; the envelope is explicit so nothing is parsed out of a header. */
function mailData(from: string, fromName: string, msg: MailMessage, date?: Date) {
  const sender = cleanAddress(from);
  const to = cleanAddress(msg.to);
  const name = cleanText(fromName);
  return {
    from: name ? { name, address: sender } : sender,
    to,
    envelope: { from: sender, to: [to] },
    subject: cleanText(msg.subject),
    html: msg.html,
    ...(date ? { date } : {}),
    // The content is ours, never a path or URL for nodemailer to read.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/** The RFC 5322 text that sendMail would transmit for this message (for tests and previews). */
export async function buildMessage(
  from: string,
  msg: MailMessage,
  opts: { fromName?: string; date?: Date } = {},
): Promise<string> {
  const data = mailData(from, opts.fromName ?? "", msg, opts.date);
  const { default: MailComposer } = await mailComposer();
  const composer = new MailComposer(data);
  const raw = await new Promise<Buffer>((resolve, reject) =>
    composer.compile().build((err, out) => (err ? reject(err) : resolve(out))),
  );
  return raw.toString("utf8");
}

/** nodemailer's SMTP options for these settings: where the rule above requires it, STARTTLS is not optional. */
export function transportOptions(settings: SmtpSettings, opts: SendOptions = {}) {
  const timeout = opts.timeoutMs ?? 30_000;
  const auth = settings.account ? { user: settings.account, pass: settings.token } : undefined;
  return {
    host: settings.host,
    port: settings.port,
    secure: settings.secure,
    requireTLS: !!auth && !mayAuthenticate(settings.secure, settings.host),
    auth,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    dnsTimeout: Math.min(timeout, 10_000),
    tls: opts.tls,
    // No connection kept between mails: they are few (codes, resets, alerts) and each one is sent alone.
    pool: false as const,
  };
}

/** nodemailer's error, worded for the operator's log: which step failed and what the server said. */
export function mailError(e: unknown, settings: SmtpSettings): MailError {
  if (e instanceof MailError) return e;
  const err = e as { code?: string; command?: string; response?: string; responseCode?: number; message?: string };
  const said = err.response ?? err.message ?? String(e);
  switch (err.code) {
    case "EAUTH":
      return new MailError(`SMTP authentication failed: ${said}`);
    case "ETLS":
      // The server answered STARTTLS with an error (or never offered it) while credentials need encryption.
      if (err.command === "STARTTLS" && err.responseCode)
        return new MailError(
          `the SMTP server offers no encryption; refusing to send the password in clear text (${said})`,
        );
      return new MailError(`SMTP TLS failed: ${err.message}`);
    case "ETIMEDOUT":
    case "EABORT":
      return new MailError(`SMTP server ${settings.host}:${settings.port} timed out`);
    case "ECONNECTION":
    case "ESOCKET":
    case "EDNS":
      if (err.command === "CONN" && !err.response)
        return new MailError(`cannot connect to SMTP server ${settings.host}:${settings.port}: ${err.message}`);
      return new MailError(`SMTP connection error: ${err.message}`);
    case "EENVELOPE":
    case "EMESSAGE":
      return new MailError(`SMTP ${err.command ?? "message"} failed: ${said}`);
    default:
      return new MailError(`SMTP error: ${err.message ?? String(e)}`);
  }
}

/** Sends one message; resolves when the server accepted it for delivery. */
export async function sendMail(settings: SmtpSettings, msg: MailMessage, opts: SendOptions = {}): Promise<void> {
  const data = mailData(settings.from, settings.fromName ?? "", msg);
  const { createTransport } = await nodemailer();
  const transport = createTransport(transportOptions(settings, opts));
  try {
    // An overall bound as well: the socket timeout alone restarts with every byte a slow server sends.
    await transport.sendMail({ ...data, signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000) });
  } catch (e) {
    throw mailError(e, settings);
  } finally {
    transport.close();
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
