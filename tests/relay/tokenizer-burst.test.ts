// A burst of counts (a crowd of clients leaving their streams at once: each cut stream counts its prompt and
// its text) is counted in the counting worker, never by loading the rank tables on the event loop (100-250 ms
// of a stalled loop). Run in a child process: this file's own process may have loaded the tables already.
import { expect, test } from "bun:test";
import { join } from "node:path";

const TOKENIZER = join(import.meta.dir, "../../server/relay/tokenizer.ts");

test("300 counts at once are all exact, and the event loop never loads the tables for them", async () => {
  const script = `
    const t = await import(${JSON.stringify(TOKENIZER)});
    const texts = Array.from({ length: 300 }, (_, i) => "a client left its stream number " + i + " after these words");
    const counts = await Promise.all(texts.map((x) => t.countTokens(x)));
    const loaded = t.o200kLoaded();
    const exact = texts.map((x) => t.countTextsNow([x]));
    console.log(JSON.stringify({ loaded, same: counts.every((n, i) => n === exact[i]), n: counts.length }));
  `;
  const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  expect(await proc.exited).toBe(0);
  expect(JSON.parse(out.trim().split("\n").pop()!)).toEqual({ loaded: false, same: true, n: 300 });
}, 60_000);
