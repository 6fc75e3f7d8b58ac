// A local midjourney-proxy for the task relay tests. Tasks move on one step each time the test calls
// advance() (or every stepMs when set, for tests against a real server process):
//   SUBMITTED 0% → IN_PROGRESS 25% → IN_PROGRESS 60% → SUCCESS 100% (with an image), or FAILURE at the end
//   when the prompt holds "fail".
// Prompt words choose the submit answer: "queued" → code 22, "exists" → code 21 (a finished task),
// "banned" → code 24 (refused), "busy" → code 23 (queue full: another channel may take it).
// `refuse` makes every submit fail: {code} as a midjourney-proxy refusal, {status} as an HTTP error.
// notify(id) posts the task to the notifyHook its submit carried, as midjourney-proxy does on each change.
import type { Server } from "bun";

export const TINY_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

export interface MjMockOptions {
  secret?: string;
  refuse?: { code: number; description?: string } | { status: number };
  stepMs?: number;
}

export interface MjMockTask {
  id: string;
  action: string;
  prompt: string;
  step: number;
  fails: boolean;
  createdAt: number;
  notifyHook: string;
  submitTime: number;
}

export interface SeenMj {
  method: string;
  path: string;
  secret: string | null;
  body: any;
}

export interface MjMock {
  url: string;
  server: Server<unknown>;
  seen: SeenMj[];
  tasks: Map<string, MjMockTask>;
  options: MjMockOptions;
  /** Moves every unfinished task on by `steps`. */
  advance(steps?: number): void;
  /** The task as list-by-condition shows it. */
  dto(id: string): any;
  /** Posts the task to its notifyHook; answers the hook's HTTP status. */
  notify(id: string): Promise<number>;
  stop(): Promise<void>;
}

const STEPS = [
  { status: "SUBMITTED", progress: "0%" },
  { status: "IN_PROGRESS", progress: "25%" },
  { status: "IN_PROGRESS", progress: "60%" },
];
let counter = 0;

export function startMjMock(options: MjMockOptions = {}): MjMock {
  const tasks = new Map<string, MjMockTask>();
  const mock: MjMock = {
    url: "",
    server: null as any,
    seen: [],
    tasks,
    options,
    advance(steps = 1) {
      for (const t of tasks.values()) t.step = Math.min(STEPS.length, t.step + steps);
    },
    dto(id) {
      const t = tasks.get(id)!;
      const step = options.stepMs
        ? Math.min(STEPS.length, Math.floor((Date.now() - t.createdAt) / options.stepMs))
        : t.step;
      const done = step >= STEPS.length;
      const s = done
        ? t.fails
          ? { status: "FAILURE", progress: "100%" }
          : { status: "SUCCESS", progress: "100%" }
        : STEPS[step]!;
      return {
        id: t.id,
        action: t.action,
        prompt: t.prompt,
        promptEn: `${t.prompt} (en)`,
        description: "/imagine",
        state: "",
        submitTime: t.submitTime,
        startTime: step > 0 ? t.submitTime + 10 : 0,
        finishTime: done ? t.submitTime + 1000 : 0,
        imageUrl: step >= 2 && !t.fails ? `${mock.url}/img/${t.id}.png` : "",
        status: s.status,
        progress: s.progress,
        failReason: done && t.fails ? "the prompt was refused by the moderators" : "",
        buttons: done && !t.fails ? [{ customId: `MJ::JOB::upsample::1::${t.id}`, label: "U1" }] : [],
        properties: { finalPrompt: t.prompt },
      };
    },
    async notify(id) {
      const t = tasks.get(id)!;
      const r = await fetch(t.notifyHook, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(mock.dto(id)),
      });
      await r.text();
      return r.status;
    },
    stop: async () => mock.server.stop(true),
  };

  const newTask = (action: string, prompt: string, notifyHook: string): MjMockTask => {
    const id = `${1700000000000 + ++counter}${Math.floor(Math.random() * 1000)}`;
    const t = {
      id,
      action,
      prompt,
      step: 0,
      fails: /fail/.test(prompt),
      createdAt: Date.now(),
      notifyHook,
      submitTime: Date.now(),
    };
    tasks.set(id, t);
    return t;
  };

  mock.server = Bun.serve({
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname;
      const body = req.method === "POST" ? await req.json().catch(() => null) : null;
      const secret = req.headers.get("mj-api-secret");
      mock.seen.push({ method: req.method, path, secret, body });
      if (path.startsWith("/img/")) return new Response(TINY_PNG, { headers: { "content-type": "image/png" } });
      if (options.secret && secret !== options.secret)
        return Response.json({ code: 4, description: "bad secret" }, { status: 401 });
      // midjourney-proxy-plus also serves each route under /mj-<mode>.
      const route = path.replace(/^\/mj-(fast|relax|turbo)(?=\/mj\/)/, "");
      if (route === "/mj/task/list-by-condition") {
        const ids: string[] = Array.isArray(body?.ids) ? body.ids : [];
        return Response.json(ids.filter((id) => tasks.has(id)).map((id) => mock.dto(id)));
      }
      const seed = /^\/mj\/task\/([^/]+)\/image-seed$/.exec(route);
      if (seed) return Response.json({ code: 1, description: "success", result: `seed-${seed[1]}` });
      if (route.startsWith("/mj/submit/") || route === "/mj/insight-face/swap") {
        const r = options.refuse;
        if (r && "status" in r)
          return Response.json(
            { code: 4, description: `proxy down (secret ${options.secret ?? ""})` },
            { status: r.status },
          );
        if (r)
          return Response.json({ code: r.code, description: r.description ?? "refused", result: null, properties: {} });
        const kind = route.split("/").pop()!;
        const prompt = String(body?.prompt ?? "");
        if (/banned/.test(prompt))
          return Response.json({
            code: 24,
            description: "may contain sensitive words",
            properties: { bannedWord: "banned" },
          });
        if (/busy/.test(prompt))
          return Response.json({ code: 23, description: "queue is full, please try later", properties: {} });
        if (kind === "upload-discord-images")
          return Response.json({ code: 1, description: "success", result: [`${mock.url}/img/upload.png`] });
        const action =
          kind === "imagine"
            ? "IMAGINE"
            : kind === "swap"
              ? "SWAP_FACE"
              : kind === "describe"
                ? "DESCRIBE"
                : kind === "blend"
                  ? "BLEND"
                  : String(body?.action ?? "UPSCALE");
        const t = newTask(action, prompt, String(body?.notifyHook ?? ""));
        if (/exists/.test(prompt)) {
          t.step = STEPS.length;
          return Response.json({
            code: 21,
            description: "task exists",
            result: t.id,
            properties: { status: "SUCCESS", imageUrl: `${mock.url}/img/${t.id}.png` },
          });
        }
        if (/queued/.test(prompt))
          return Response.json({
            code: 22,
            description: "in queue, 1 ahead",
            result: t.id,
            properties: { numberOfQueues: 1 },
          });
        return Response.json({
          code: 1,
          description: "submitted",
          result: t.id,
          properties: { discordInstanceId: "1" },
        });
      }
      return Response.json({ code: 4, description: "not found" }, { status: 404 });
    },
  });
  mock.url = `http://127.0.0.1:${mock.server.port}`;
  return mock;
}
