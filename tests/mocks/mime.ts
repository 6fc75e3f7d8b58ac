// Reading a received mail as a mail client would, for the test SMTP receivers: header lines unfolded
// (RFC 5322 §2.2.3), RFC 2047 encoded words decoded (B and Q, adjacent words joined), the body decoded
// from base64 or quoted-printable. Independent of the code that wrote the mail, so a test checks what a
// reader gets, not how the sender chose to encode it.

export interface ParsedMail {
  /** Header fields in order, names as written, values unfolded but still encoded. */
  fields: { name: string; value: string }[];
  /** The decoded value of the first field with this name (case-insensitive), "" when absent. */
  header(name: string): string;
  /** The From field's display name and address, decoded. */
  from: { name: string; address: string };
  subject: string;
  /** The body, transfer decoding undone, as UTF-8 text. */
  body: string;
}

/** The header block's lines with folded continuations joined back to their field. */
export function unfold(head: string): string[] {
  const lines: string[] = [];
  for (const line of head.split("\r\n")) {
    if (/^[ \t]/.test(line) && lines.length) lines[lines.length - 1] += line;
    else lines.push(line);
  }
  return lines;
}

function decodeQ(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "_") bytes.push(0x20);
    else if (c === "=" && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(c.charCodeAt(0));
  }
  return Buffer.from(bytes);
}

/** RFC 2047: =?charset?B|Q?text?=; whitespace between two encoded words is not part of the text. */
export function decodeWords(value: string): string {
  const word = /=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g;
  const joined = value.replace(/(\?=)\s+(?==\?)/g, "$1");
  // Decode adjacent words as one byte sequence, so a character split across two words survives.
  return joined.replace(/(?:=\?[^?]+\?[BbQq]\?[^?]*\?=)+/g, (run) => {
    const parts: Buffer[] = [];
    for (const m of run.matchAll(word))
      parts.push(m[2].toUpperCase() === "B" ? Buffer.from(m[3], "base64") : decodeQ(m[3]));
    return Buffer.concat(parts).toString("utf8");
  });
}

export function decodeQuotedPrintable(text: string): string {
  const soft = text.replace(/=\r?\n/g, "");
  const bytes: number[] = [];
  for (let i = 0; i < soft.length; i++) {
    if (soft[i] === "=" && /^[0-9A-Fa-f]{2}$/.test(soft.slice(i + 1, i + 3))) {
      bytes.push(parseInt(soft.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(soft[i], "utf8"));
  }
  return Buffer.from(bytes).toString("utf8");
}

/** "Name" <addr>, Name <addr> or a bare addr; the name decoded and unquoted. */
function parseMailbox(value: string): { name: string; address: string } {
  const m = /^(.*)<([^<>]*)>\s*$/.exec(value);
  if (!m) return { name: "", address: value.trim() };
  let name = m[1].trim();
  if (name.startsWith('"') && name.endsWith('"')) name = name.slice(1, -1).replace(/\\(.)/g, "$1");
  return { name: decodeWords(name), address: m[2].trim() };
}

/** Parses the DATA of one message as it crossed the wire (dot-stuffing already undone). */
export function parseMail(data: string): ParsedMail {
  const split = data.indexOf("\r\n\r\n");
  const head = split < 0 ? data : data.slice(0, split);
  // The line break before the end-of-data dot ends the last line; it is not part of the content.
  const rawBody = split < 0 ? "" : data.slice(split + 4).replace(/\r\n$/, "");
  const fields = unfold(head)
    .filter(Boolean)
    .map((l) => {
      const colon = l.indexOf(":");
      return { name: l.slice(0, colon), value: l.slice(colon + 1).trim() };
    });
  const raw = (name: string) => fields.find((f) => f.name.toLowerCase() === name.toLowerCase())?.value ?? "";
  const cte = raw("Content-Transfer-Encoding").toLowerCase();
  const body =
    cte === "base64"
      ? Buffer.from(rawBody.replace(/\s+/g, ""), "base64").toString("utf8")
      : cte === "quoted-printable"
        ? decodeQuotedPrintable(rawBody)
        : rawBody;
  return {
    fields,
    header: (name) => decodeWords(raw(name)),
    from: parseMailbox(raw("From")),
    subject: decodeWords(raw("Subject")),
    body,
  };
}
