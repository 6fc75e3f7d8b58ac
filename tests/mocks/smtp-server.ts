// A local SMTP receiver for tests: speaks enough ESMTP for server/infra/mail.ts (EHLO, AUTH PLAIN/LOGIN,
// MAIL, RCPT, DATA, QUIT), keeps every accepted message and decodes it as a mail client would (mime.ts),
// so a test can read the subject, sender name and the code or link a user would have received.
import { parseMail } from "./mime.ts";

export interface ReceivedMail {
  from: string;
  /** The RCPT TO address without angle brackets. */
  to: string;
  /** The display name of the From header, decoded. */
  fromName: string;
  subject: string;
  /** The decoded HTML body. */
  html: string;
  /** Plain text of the body (tags removed, entities &amp; &lt; &gt; &quot; &#NN; decoded). */
  text: string;
  auth: string | null;
}

export interface SmtpReceiver {
  host: string;
  port: number;
  mails: ReceivedMail[];
  /** Resolves with the n-th mail (1-based) once it has arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMail>;
  /** Makes the next RCPT TO answer 550 (a mailbox the server refuses). */
  refuseNextRecipient(): void;
  stop(): void;
}

function decodeEntities(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&");
}

/** The path of MAIL FROM / RCPT TO without its brackets and any parameters after it (SIZE=, BODY=). */
const bracketed = (arg: string) => /<([^>]*)>/.exec(arg)?.[1] ?? arg.trim();

function parse(data: string, from: string, to: string, auth: string | null): ReceivedMail {
  const mail = parseMail(data);
  const text = decodeEntities(mail.body.replace(/<[^>]+>/g, " "))
    .replace(/\s+/g, " ")
    .trim();
  return { from, to, fromName: mail.from.name, subject: mail.subject, html: mail.body, text, auth };
}

export function smtpReceiver(opts: { user?: string; pass?: string } = {}): SmtpReceiver {
  const mails: ReceivedMail[] = [];
  const waiters: { n: number; resolve: (m: ReceivedMail) => void }[] = [];
  let refuse = false;
  type State = { buf: string; data: string | null; from: string; to: string; auth: string | null };

  const accept = (m: ReceivedMail) => {
    mails.push(m);
    for (const w of [...waiters]) {
      if (mails.length >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(mails[w.n - 1]);
      }
    }
  };

  const server = Bun.listen<State>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "", data: null, from: "", to: "", auth: null };
        s.write("220 test-smtp ESMTP\r\n");
      },
      data(s, chunk) {
        const st = s.data;
        st.buf += chunk.toString();
        let i: number;
        while ((i = st.buf.indexOf("\r\n")) >= 0) {
          const line = st.buf.slice(0, i);
          st.buf = st.buf.slice(i + 2);
          if (st.data !== null) {
            if (line === ".") {
              accept(parse(st.data.replace(/^\.\./gm, "."), st.from, st.to, st.auth));
              st.data = null;
              s.write("250 queued\r\n");
            } else st.data += line + "\r\n";
            continue;
          }
          const upper = line.toUpperCase();
          if (upper.startsWith("EHLO") || upper.startsWith("HELO")) s.write("250-test-smtp\r\n250 AUTH PLAIN\r\n");
          else if (upper.startsWith("AUTH PLAIN ")) {
            const [, u, p] = Buffer.from(line.slice(11), "base64").toString().split("\0");
            const good = (opts.user === undefined || u === opts.user) && (opts.pass === undefined || p === opts.pass);
            st.auth = u;
            s.write(good ? "235 ok\r\n" : "535 bad credentials\r\n");
          } else if (upper.startsWith("MAIL FROM:")) {
            st.from = bracketed(line.slice(10));
            s.write("250 ok\r\n");
          } else if (upper.startsWith("RCPT TO:")) {
            st.to = bracketed(line.slice(8));
            if (refuse) {
              refuse = false;
              s.write("550 no such mailbox\r\n");
            } else s.write("250 ok\r\n");
          } else if (upper === "DATA") {
            st.data = "";
            s.write("354 go ahead\r\n");
          } else if (upper === "QUIT") {
            s.write("221 bye\r\n");
            s.end();
          } else s.write("502 unknown command\r\n");
        }
      },
    },
  });

  return {
    host: "127.0.0.1",
    port: server.port,
    mails,
    waitFor(n, timeoutMs = 5000) {
      if (mails.length >= n) return Promise.resolve(mails[n - 1]);
      return new Promise((resolve, reject) => {
        const w = { n, resolve };
        waiters.push(w);
        setTimeout(() => {
          const at = waiters.indexOf(w);
          if (at >= 0) {
            waiters.splice(at, 1);
            reject(new Error(`mail #${n} did not arrive within ${timeoutMs} ms (got ${mails.length})`));
          }
        }, timeoutMs);
      });
    },
    refuseNextRecipient() {
      refuse = true;
    },
    stop() {
      server.stop(true);
    },
  };
}

/** Points the site's SMTP options at a receiver (no AUTH: a local relay, as many small sites use). */
export async function useSmtp(
  options: { set(key: string, value: string): Promise<void> },
  smtp: SmtpReceiver,
  from = "noreply@gateway.test",
): Promise<void> {
  await options.set("SMTPServer", smtp.host);
  await options.set("SMTPPort", String(smtp.port));
  await options.set("SMTPAccount", "");
  await options.set("SMTPToken", "");
  await options.set("SMTPFrom", from);
}

/** The six-digit code in a verification mail. */
export function codeIn(mail: ReceivedMail): string {
  const m = /\b(\d{6})\b/.exec(mail.text);
  if (!m) throw new Error(`no code in mail: ${mail.text}`);
  return m[1];
}
