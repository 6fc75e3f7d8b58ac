// The SSE reader: the same events whatever the chunking (CRLF split across chunks included), and work in
// proportion to the stream, not to the square of an event's size.
import { test, expect } from "bun:test";
import { SseReader } from "../../server/relay/formats/sse.ts";
const enc = new TextEncoder();
function feed(text: string, cuts: number[]) { const r = new SseReader(); const out: any[] = []; let prev = 0; for (const c of [...cuts, text.length]) { out.push(...r.push(enc.encode(text.slice(prev, c)))); prev = c; } out.push(...r.finish()); return out.map((e) => [e.event, e.data]); }
test("same events whatever the chunking, CRLF split included", () => {
  const text = "event: a\r\ndata: 1\r\n\r\ndata: two\r\ndata: lines\r\n\r\n: comment\n\ndata: last";
  const whole = feed(text, []);
  expect(whole).toEqual([["a", "1"], [undefined, "two\nlines"], [undefined, "last"]]);
  for (let i = 0; i < 400; i++) {
    const cuts = Array.from({ length: 1 + (i % 7) }, () => Math.floor(Math.random() * text.length)).sort((a, b) => a - b);
    expect(feed(text, cuts)).toEqual(whole);
  }
});
test("one huge event in small pieces costs in proportion to its size (10× the pieces, not 100× the time)", () => {
  const piece = enc.encode("x".repeat(64));
  const run = (n: number) => {
    const r = new SseReader();
    r.push(enc.encode("data: "));
    const t0 = performance.now();
    for (let i = 0; i < n; i++) r.push(piece);
    const ev = r.push(enc.encode("\n\n"));
    expect(ev[0].data.length).toBe(64 * n);
    return performance.now() - t0;
  };
  run(2_000);
  const small = Math.max(run(5_000), 0.5);
  // Linear: about 10×. Rescanning the unfinished event on every piece (as before) made it about 100×.
  expect(run(50_000) / small).toBeLessThan(35);
});
