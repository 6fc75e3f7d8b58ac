// A stand-in for the Realtime API's websocket, as OpenAI (/v1/realtime?model=, bearer key) and Azure
// (/openai/realtime?api-version=&deployment= or /openai/v1/realtime?model=, api-key header) serve it. It
// answers session.update with session.updated and response.create with response.created, two text deltas
// and response.done carrying RT_USAGE. Models named with "-slow" stop after the first delta until the
// client cancels (response.cancel → response.done "cancelled" with RT_CANCELLED_USAGE).
import type { Server, ServerWebSocket } from "bun";

export const RT_USAGE = {
  total_tokens: 270,
  input_tokens: 120,
  output_tokens: 150,
  input_token_details: {
    cached_tokens: 20,
    text_tokens: 40,
    audio_tokens: 80,
    cached_tokens_details: { text_tokens: 20, audio_tokens: 0 },
  },
  output_token_details: { text_tokens: 30, audio_tokens: 120 },
};
export const RT_CANCELLED_USAGE = {
  total_tokens: 60,
  input_tokens: 40,
  output_tokens: 20,
  input_token_details: { cached_tokens: 0, text_tokens: 40, audio_tokens: 0 },
  output_token_details: { text_tokens: 5, audio_tokens: 15 },
};

export interface RealtimeMock {
  url: string;
  /** client events received, per session in order */
  received: any[];
  /** the upgrade requests: path with query and the auth headers */
  upgrades: { path: string; authorization: string | null; apiKey: string | null; beta: string | null }[];
  /** sessions whose socket the gateway closed */
  closed: number;
  stop(): void;
}

interface Data {
  model: string;
  responses: number;
  open: string | null;
}

export function startRealtimeUpstream(opts: { key?: string; azureKey?: string } = {}): RealtimeMock {
  const key = opts.key ?? "sk-rt-channel";
  const azureKey = opts.azureKey ?? "azure-rt-key";
  const mock: RealtimeMock = { url: "", received: [], upgrades: [], closed: 0, stop: () => server.stop(true) };
  const send = (ws: ServerWebSocket<Data>, type: string, fields: object = {}) =>
    ws.send(JSON.stringify({ type, event_id: `event_${Math.random().toString(36).slice(2)}`, ...fields }));
  const done = (ws: ServerWebSocket<Data>, id: string, status: string, usage: object) => {
    ws.data.open = null;
    send(ws, "response.done", { response: { id, object: "realtime.response", status, output: [], usage } });
  };
  const server: Server<Data> = Bun.serve<Data>({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req, srv) {
      const url = new URL(req.url);
      const azure = url.pathname.startsWith("/openai/");
      const auth = azure
        ? req.headers.get("api-key") === azureKey
        : req.headers.get("authorization") === `Bearer ${key}`;
      mock.upgrades.push({
        path: url.pathname + url.search,
        authorization: req.headers.get("authorization"),
        apiKey: req.headers.get("api-key"),
        beta: req.headers.get("openai-beta"),
      });
      if (!auth)
        return Response.json(
          { error: { message: "Incorrect API key provided", code: "invalid_api_key" } },
          { status: 401 },
        );
      const model =
        url.pathname === "/openai/realtime" ? url.searchParams.get("deployment") : url.searchParams.get("model");
      const known =
        url.pathname === "/v1/realtime"
        || url.pathname === "/openai/v1/realtime"
        || (url.pathname === "/openai/realtime" && url.searchParams.get("api-version"));
      if (!known || !model) return Response.json({ error: { message: "not found" } }, { status: 404 });
      if (srv.upgrade(req, { data: { model, responses: 0, open: null } })) return undefined as any;
      return new Response("expected a websocket", { status: 400 });
    },
    websocket: {
      open(ws) {
        send(ws, "session.created", { session: { id: "sess_1", object: "realtime.session", model: ws.data.model } });
      },
      message(ws, raw) {
        let ev: any;
        try {
          ev = JSON.parse(String(raw));
        } catch {
          send(ws, "error", { error: { type: "invalid_request_error", message: "not JSON" } });
          return;
        }
        mock.received.push(ev);
        if (ev.type === "session.update") send(ws, "session.updated", { session: { ...ev.session, id: "sess_1" } });
        else if (ev.type === "conversation.item.create")
          send(ws, "conversation.item.created", { item: { ...ev.item, id: "item_1" } });
        else if (ev.type === "response.create") {
          const id = `resp_rt_${++ws.data.responses}`;
          ws.data.open = id;
          send(ws, "response.created", {
            response: { id, object: "realtime.response", status: "in_progress", output: [] },
          });
          send(ws, "response.output_text.delta", {
            response_id: id,
            item_id: "item_r",
            output_index: 0,
            content_index: 0,
            delta: "Hello",
          });
          if (ws.data.model.includes("-slow")) return;
          send(ws, "response.output_text.delta", {
            response_id: id,
            item_id: "item_r",
            output_index: 0,
            content_index: 0,
            delta: " realtime",
          });
          done(ws, id, "completed", RT_USAGE);
        } else if (ev.type === "response.cancel" && ws.data.open)
          done(ws, ws.data.open, "cancelled", RT_CANCELLED_USAGE);
      },
      close() {
        mock.closed++;
      },
    },
  });
  mock.url = `http://127.0.0.1:${server.port}`;
  return mock;
}
