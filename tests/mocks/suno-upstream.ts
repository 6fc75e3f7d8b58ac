// A local Suno API server for the task relay tests (the API one-api/new-api Suno channels call). Tasks move
// on one step per advance() (or every stepMs): SUBMITTED → QUEUED → IN_PROGRESS 40% → IN_PROGRESS 70% →
// SUCCESS with two clips (audio, cover image), or FAILURE at the end when the prompt holds "fail".
// `refuse`: every submit answers {code: "error"} (or the HTTP status given).
import type { Server } from "bun";
import { TINY_PNG } from "./midjourney-upstream.ts";

export interface SunoMockOptions {
  key?: string;
  refuse?: { message: string } | { status: number };
  stepMs?: number;
}

interface SunoTask {
  id: string;
  action: string;
  prompt: string;
  step: number;
  fails: boolean;
  createdAt: number;
  submitTime: number;
}

export interface SunoMock {
  url: string;
  server: Server<unknown>;
  seen: { path: string; authorization: string | null; body: any }[];
  tasks: Map<string, SunoTask>;
  options: SunoMockOptions;
  advance(steps?: number): void;
  item(id: string): any;
  stop(): Promise<void>;
}

const STEPS = [
  { status: "SUBMITTED" },
  { status: "QUEUED" },
  { status: "IN_PROGRESS", progress: "40%" },
  { status: "IN_PROGRESS", progress: "70%" },
];
let counter = 0;

export function startSunoMock(options: SunoMockOptions = {}): SunoMock {
  const tasks = new Map<string, SunoTask>();
  const mock: SunoMock = {
    url: "",
    server: null as any,
    seen: [],
    tasks,
    options,
    advance(steps = 1) {
      for (const t of tasks.values()) t.step = Math.min(STEPS.length, t.step + steps);
    },
    item(id) {
      const t = tasks.get(id)!;
      const step = options.stepMs
        ? Math.min(STEPS.length, Math.floor((Date.now() - t.createdAt) / options.stepMs))
        : t.step;
      const done = step >= STEPS.length;
      const s: { status: string; progress?: string } = done
        ? { status: t.fails ? "FAILURE" : "SUCCESS", progress: "100%" }
        : STEPS[step]!;
      const clips =
        done && !t.fails
          ? [1, 2].map((n) => ({
              id: `${t.id}-clip${n}`,
              status: "complete",
              title: `song ${n}`,
              audio_url: `${mock.url}/audio/${t.id}-${n}.mp3`,
              image_url: `${mock.url}/img/${t.id}-${n}.png`,
              metadata: { prompt: t.prompt },
            }))
          : [];
      return {
        task_id: t.id,
        action: t.action,
        status: s.status,
        ...(s.progress ? { progress: s.progress } : {}),
        fail_reason: done && t.fails ? "the lyrics were refused" : "",
        submit_time: Math.floor(t.submitTime / 1000),
        start_time: step >= 2 ? Math.floor(t.submitTime / 1000) + 1 : 0,
        finish_time: done ? Math.floor(t.submitTime / 1000) + 30 : 0,
        data: clips,
      };
    },
    stop: async () => mock.server.stop(true),
  };
  mock.server = Bun.serve({
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = req.method === "POST" ? await req.json().catch(() => null) : null;
      const authorization = req.headers.get("authorization");
      mock.seen.push({ path, authorization, body });
      if (path.startsWith("/img/")) return new Response(TINY_PNG, { headers: { "content-type": "image/png" } });
      if (options.key && authorization !== `Bearer ${options.key}`)
        return Response.json({ code: "unauthorized", message: "bad key" }, { status: 401 });
      if (path === "/suno/fetch") {
        const ids: string[] = Array.isArray(body?.ids) ? body.ids : [];
        return Response.json({
          code: "success",
          message: "",
          data: ids.filter((id) => tasks.has(id)).map((id) => mock.item(id)),
        });
      }
      const one = /^\/suno\/fetch\/(.+)$/.exec(path);
      if (one)
        return tasks.has(one[1]!)
          ? Response.json({ code: "success", data: mock.item(one[1]!) })
          : Response.json({ code: "not_found", message: "no task" }, { status: 404 });
      const submit = /^\/suno\/submit\/(music|lyrics)$/.exec(path);
      if (submit) {
        const r = options.refuse;
        if (r && "status" in r) return Response.json({ code: "error", message: "service down" }, { status: r.status });
        if (r) return Response.json({ code: "error", message: r.message, data: null });
        const id = `suno-${Date.now()}-${++counter}`;
        const prompt = String(body?.prompt ?? body?.gpt_description_prompt ?? "");
        tasks.set(id, {
          id,
          action: submit[1]!.toUpperCase(),
          prompt,
          step: 0,
          fails: /fail/.test(prompt),
          createdAt: Date.now(),
          submitTime: Date.now(),
        });
        return Response.json({ code: "success", message: "", data: id });
      }
      return Response.json({ code: "not_found", message: "not found" }, { status: 404 });
    },
  });
  mock.url = `http://127.0.0.1:${mock.server.port}`;
  return mock;
}
