// The SSE reader: the same events whatever the chunking (CRLF split across chunks included), and work in
// proportion to the stream, not to the square of an event's size.
import { test, expect } from "bun:test";
import { SseReader } from "../../server/relay/formats/sse.ts";
const enc = new TextEncoder();
function feed(text: string, cuts: number[]) {
  const r = new SseReader();
  const out: any[] = [];
  let prev = 0;
  for (const c of [...cuts, text.length]) {
    out.push(...r.push(enc.encode(text.slice(prev, c))));
    prev = c;
  }
  out.push(...r.finish());
  return out.map((e) => [e.event, e.data]);
}
test("same events whatever the chunking, CRLF split included", () => {
  const text = "event: a\r\ndata: 1\r\n\r\ndata: two\r\ndata: lines\r\n\r\n: comment\n\ndata: last";
  const whole = feed(text, []);
  expect(whole).toEqual([
    ["a", "1"],
    [undefined, "two\nlines"],
    [undefined, "last"],
  ]);
  for (let i = 0; i < 400; i++) {
    const cuts = Array.from({ length: 1 + (i % 7) }, () => Math.floor(Math.random() * text.length)).sort(
      (a, b) => a - b,
    );
    expect(feed(text, cuts)).toEqual(whole);
  }
});
test("one huge event in small pieces costs in proportion to its size (10× the pieces, not 100× the work)", () => {
  const piece = enc.encode("x".repeat(64));
  // The work counted, not timed: every character the reader's string scans pass over (each call's receiver).
  const SCANS = ["indexOf", "lastIndexOf", "includes", "startsWith", "endsWith", "replace", "split", "search"] as const;
  const scanned = (n: number) => {
    const r = new SseReader();
    r.push(enc.encode("data: "));
    let chars = 0;
    const proto = String.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
    const saved = SCANS.map((m) => proto[m]!);
    SCANS.forEach(
      (m, i) =>
        (proto[m] = function (this: string, ...a: unknown[]) {
          chars += this.length;
          return saved[i]!.apply(this, a);
        }),
    );
    let ev;
    try {
      for (let i = 0; i < n; i++) r.push(piece);
      ev = r.push(enc.encode("\n\n"));
    } finally {
      SCANS.forEach((m, i) => (proto[m] = saved[i]!));
    }
    expect(ev[0]!.data.length).toBe(64 * n);
    return chars;
  };
  const small = scanned(20_000);
  expect(small).toBeGreaterThan(20_000 * 64);
  // Linear: about 10×. Rescanning the unfinished event on every piece made it about 100×.
  expect(scanned(200_000) / small).toBeLessThan(20);
});
test("a chunk that is one whole data line gives the same event (data and raw text) as the same bytes read piece by piece", () => {
  const events = [
    'data: {"a":1}\n\n',
    "data:no-space\n\n",
    "data: \n\n",
    "event: e\ndata: x\n\n",
    "data: a\ndata: b\n\n",
    "data: [DONE]\n\n",
    ": ping\n\n",
    'data: {"b":"☃"}\n\n',
  ];
  const all = (r: SseReader, chunks: string[]) =>
    [...chunks.flatMap((c) => r.push(enc.encode(c))), ...r.finish()].map((e) => [e.event, e.data, e.raw]);
  const bytewise = all(new SseReader(), [...events.join("")]);
  expect(bytewise.length).toBe(7);
  expect(all(new SseReader(), events)).toEqual(bytewise);
  // After an unfinished event, the next whole-looking line still belongs to it.
  const r = new SseReader();
  expect(r.push(enc.encode("data: start\n"))).toEqual([]);
  expect(r.push(enc.encode("data: more\n\n")).map((e) => e.data)).toEqual(["start\nmore"]);
});
