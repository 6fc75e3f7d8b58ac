// A local OpenAI video API for the task relay tests: POST /v1/videos (JSON or multipart) creates a video;
// each advance() moves it queued → in_progress 30 → in_progress 70 → completed (or failed when the prompt
// holds "fail"); GET /v1/videos/{id} reads it, GET /v1/videos/{id}/content answers the file.
import type { Server } from "bun";

interface Video {
  id: string;
  model: string;
  prompt: string;
  seconds: string;
  step: number;
  fails: boolean;
  created: number;
}

export interface VideoMock {
  url: string;
  server: Server<unknown>;
  seen: { method: string; path: string; authorization: string | null; body: any; contentType: string }[];
  videos: Map<string, Video>;
  advance(steps?: number): void;
  stop(): Promise<void>;
}

export const VIDEO_BYTES = new TextEncoder().encode("\x00\x00\x00\x18ftypmp42-mock-video-bytes");
let counter = 0;

export function startVideoMock(): VideoMock {
  const videos = new Map<string, Video>();
  const object = (v: Video) => {
    const done = v.step >= 3;
    const status = done ? (v.fails ? "failed" : "completed") : v.step === 0 ? "queued" : "in_progress";
    return {
      id: v.id,
      object: "video",
      model: v.model,
      status,
      progress: done ? 100 : [0, 30, 70][v.step],
      created_at: v.created,
      ...(done && !v.fails ? { completed_at: v.created + 60 } : {}),
      size: "720x1280",
      seconds: v.seconds,
      quality: "standard",
      ...(done && v.fails ? { error: { code: "moderation_blocked", message: "the prompt was blocked" } } : {}),
    };
  };
  const mock: VideoMock = {
    url: "",
    server: null as any,
    seen: [],
    videos,
    advance(steps = 1) {
      for (const v of videos.values()) v.step = Math.min(3, v.step + steps);
    },
    stop: async () => mock.server.stop(true),
  };
  mock.server = Bun.serve({
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const contentType = req.headers.get("content-type") ?? "";
      let body: any = null;
      if (req.method === "POST")
        body = contentType.includes("multipart/form-data")
          ? Object.fromEntries((await req.formData()).entries())
          : await req.json().catch(() => null);
      mock.seen.push({ method: req.method, path, authorization: req.headers.get("authorization"), body, contentType });
      if (path === "/v1/models") return Response.json({ object: "list", data: [{ id: "sora-2", object: "model" }] });
      if (req.method === "POST" && path === "/v1/videos") {
        const v: Video = {
          id: `video_${Date.now()}${++counter}`,
          model: String(body?.model),
          prompt: String(body?.prompt),
          seconds: String(body?.seconds ?? "4"),
          step: 0,
          fails: /fail/.test(String(body?.prompt)),
          created: Math.floor(Date.now() / 1000),
        };
        videos.set(v.id, v);
        return Response.json(object(v));
      }
      const m = /^\/v1\/videos\/([^/]+)(\/content)?$/.exec(path);
      const v = m ? videos.get(m[1]!) : undefined;
      if (!v)
        return Response.json({ error: { message: "video not found", type: "invalid_request_error" } }, { status: 404 });
      if (m![2]) {
        if (v.step < 3 || v.fails)
          return Response.json(
            { error: { message: "video is not ready", type: "invalid_request_error" } },
            { status: 400 },
          );
        return new Response(VIDEO_BYTES, { headers: { "content-type": "video/mp4" } });
      }
      return Response.json(object(v));
    },
  });
  mock.url = `http://127.0.0.1:${mock.server.port}`;
  return mock;
}
