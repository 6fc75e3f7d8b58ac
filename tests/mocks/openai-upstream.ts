// A local OpenAI-compatible upstream for relay tests and benchmarks. Behaviour is chosen per instance
// (failStatus, slowMs, usage) or per request by words in the model name:
//   "...-nousage"  never reports usage          "...-cut"    stream breaks off after two chunks
//   "...-slow"     waits slowMs before each chunk "...-fail-N" answers status N (e.g. gpt-fail-500)
//   "...-eof"      stream closes cleanly after two chunks, with no finish_reason and no [DONE]
//   "...-badjson"  non-stream answer is 200 with a JSON body cut in the middle
// Chat also answers like OpenAI to: response_format (JSON content fitting the schema), reasoning_effort
// (reasoning_content, as OpenAI-compatible reasoning models send it), n (that many choices); tool and
// response schemas that are not JSON Schema (Gemini's "OBJECT") are refused with OpenAI's 400, and so is
// max_tokens sent to a reasoning model (o-series, gpt-5*), which takes max_completion_tokens, and a temperature or
// top_p other than 1 sent to one. The Responses
// API answers text, a function call when given tools, and its typed events when streamed.
import type { Server } from "bun";
import { jsonSchemaProblem, sampleFor } from "./schema.ts";

export interface MockOptions {
  /** Every request answers this status with an OpenAI error body (a broken channel). */
  failStatus?: number;
  /** Delay before each stream chunk and before non-stream answers of "-slow" models (ms). */
  slowMs?: number;
  usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  /** Pieces of the streamed answer. */
  chunks?: string[];
}

/** `raw`: a JSON body's text as it arrived. */
export interface SeenRequest {
  path: string;
  authorization: string | null;
  body: any;
  raw?: string;
  search?: string;
  headers?: Record<string, string>;
}

export interface MockUpstream {
  url: string;
  server: Server<unknown>;
  seen: SeenRequest[];
  /** Streams the client (the gateway) cancelled before they ended. */
  cancelled: number;
  /** Slow non-stream answers whose caller (the gateway) had gone when they were ready. */
  abandoned: number;
  options: MockOptions;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const SECRET_IN_ERRORS = "sk-upstreamsecret123456";

export function startMockUpstream(options: MockOptions = {}): MockUpstream {
  const mock: MockUpstream = {
    url: "",
    server: null as any,
    seen: [],
    cancelled: 0,
    abandoned: 0,
    options,
    stop: async () => mock.server.stop(true),
  };
  const usage = () => {
    const u = mock.options.usage ?? { prompt_tokens: 10, completion_tokens: 20 };
    return {
      prompt_tokens: u.prompt_tokens,
      completion_tokens: u.completion_tokens,
      total_tokens: u.prompt_tokens + u.completion_tokens,
      prompt_tokens_details: { cached_tokens: u.cached_tokens ?? 0 },
    };
  };

  mock.server = Bun.serve({
    port: 0,
    idleTimeout: 60,
    // The "-cut" streams fail on purpose; keep Bun from printing them as server errors.
    error: () => new Response(null, { status: 500 }),
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const isForm = (req.headers.get("content-type") ?? "").includes("multipart/form-data");
      let body: any = null;
      let raw: string | undefined;
      if (req.method === "POST" && isForm) body = Object.fromEntries((await req.formData()).entries());
      else if (req.method === "POST") {
        raw = await req.text();
        try {
          body = JSON.parse(raw);
        } catch {}
      }
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k] = v));
      mock.seen.push({
        path,
        authorization: req.headers.get("authorization"),
        body,
        raw,
        search: new URL(req.url).search,
        headers,
      });
      const model = String(body?.model ?? "");
      const failMatch = /-fail-(\d{3})/.exec(model);
      const fail = mock.options.failStatus ?? (failMatch ? Number(failMatch[1]) : 0);
      if (fail) {
        return Response.json(
          {
            error: {
              message: `upstream failure ${fail} (key ${SECRET_IN_ERRORS} at http://10.0.0.9/internal)`,
              type: "server_error",
              code: null,
            },
          },
          { status: fail },
        );
      }
      const slow = model.includes("-slow") ? (mock.options.slowMs ?? 200) : 0;
      const noUsage = model.includes("-nousage");

      if (path === "/v1/models")
        return Response.json({
          object: "list",
          data: [{ id: "gpt-4o-mini", object: "model", created: 0, owned_by: "openai" }],
        });
      if (path === "/v1/chat/completions" || path === "/v1/completions") {
        const chat = path === "/v1/chat/completions";
        if (chat) {
          const problem = chatProblem(body);
          if (problem)
            return Response.json(
              { error: { message: problem, type: "invalid_request_error", param: null, code: null } },
              { status: 400 },
            );
        }
        const json = chat ? jsonAnswer(body) : null;
        const chunks = json !== null ? [json] : (mock.options.chunks ?? ["Hello", " world", "!"]);
        const tool =
          chat && Array.isArray(body?.tools) && body.tools.length > 0 && body.tool_choice !== "none"
            ? body.tools[0].function.name
            : null;
        const reasoning = chat && body?.reasoning_effort ? REASONING : null;
        const n = chat ? Math.max(1, Number(body?.n) || 1) : 1;
        if (body?.stream)
          return streamAnswer(mock, {
            chat,
            model,
            chunks,
            tool,
            reasoning,
            n,
            slow,
            cut: model.includes("-cut"),
            eof: model.includes("-eof"),
            usage: body?.stream_options?.include_usage && !noUsage ? usage() : null,
          });
        if (slow) {
          await sleep(slow);
          if (req.signal.aborted) mock.abandoned++;
        }
        if (model.includes("-badjson"))
          return new Response(
            '{"id":"cmpl-mock","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis',
            { headers: { "content-type": "application/json" } },
          );
        const text = chunks.join("");
        const base = { id: "cmpl-mock", created: 1700000000, model, ...(noUsage ? {} : { usage: usage() }) };
        if (!chat)
          return Response.json({
            ...base,
            object: "text_completion",
            choices: [{ index: 0, text, finish_reason: "stop", logprobs: null }],
          });
        const message: Record<string, unknown> = tool
          ? {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "call_1", type: "function", function: { name: tool, arguments: '{"city":"Paris"}' } }],
            }
          : { role: "assistant", content: text };
        if (reasoning) message.reasoning_content = reasoning;
        const choices = Array.from({ length: n }, (_, index) => ({
          index,
          message,
          finish_reason: tool ? "tool_calls" : "stop",
          logprobs: null,
        }));
        return Response.json({ ...base, object: "chat.completion", choices });
      }
      if (path === "/v1/embeddings") {
        const inputs = Array.isArray(body?.input) ? body.input : [body?.input];
        const vector = [0.1, 0.2, 0.3];
        // The openai SDK asks for base64 (little-endian float32) by default.
        const embedding =
          body?.encoding_format === "base64" ? Buffer.from(new Float32Array(vector).buffer).toString("base64") : vector;
        return Response.json({
          object: "list",
          model,
          data: inputs.map((_: unknown, index: number) => ({ object: "embedding", index, embedding })),
          usage: { prompt_tokens: 8, total_tokens: 8 },
        });
      }
      if (path === "/v1/moderations")
        return Response.json({
          id: "modr-1",
          model,
          results: [{ flagged: false, categories: {}, category_scores: {} }],
        });
      if (path === "/v1/images/generations")
        return Response.json({
          created: 1700000000,
          data: Array.from({ length: Number(body?.n ?? 1) }, () => ({ url: "https://example.invalid/image.png" })),
        });
      if (path === "/v1/audio/speech")
        return new Response(new Uint8Array([73, 68, 51, 4, 0, 0]), { headers: { "content-type": "audio/mpeg" } });
      if (path === "/v1/audio/transcriptions" || path === "/v1/audio/translations") {
        const size = body?.file instanceof Blob ? body.file.size : 0;
        return Response.json({ text: `transcribed ${size} bytes` });
      }
      if (path === "/v1/rerank")
        return Response.json({ results: [{ index: 0, relevance_score: 0.9 }], usage: { total_tokens: 12 } });
      if (path === "/v1/responses") return responsesAnswer(body, model);
      if (path === "/v1/responses/compact") return compactAnswer(body);
      if (path === "/v1/images/edits") {
        const size = body?.image instanceof Blob ? body.image.size : 0;
        return Response.json({
          created: 1700000000,
          data: Array.from({ length: Number(body?.n ?? 1) }, () => ({
            b64_json: Buffer.from(`edited ${size} bytes: ${body?.prompt}`).toString("base64"),
          })),
        });
      }
      return Response.json({ error: { message: "unknown path" } }, { status: 404 });
    },
  });
  mock.url = `http://127.0.0.1:${mock.server.port}`;
  return mock;
}

/** The reasoning text chat answers carry when asked with reasoning_effort. */
export const REASONING = "Considered it.";

/** What the real API refuses a chat request for that a conversion could get wrong. */
export function chatProblem(body: any): string | null {
  if (/^(o\d|gpt-5)/.test(String(body?.model ?? ""))) {
    if (body?.max_tokens !== undefined)
      return "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
    for (const k of ["temperature", "top_p"]) {
      if (body?.[k] !== undefined && body[k] !== 1)
        return `Unsupported value: '${k}' does not support ${body[k]} with this model. Only the default (1) value is supported.`;
    }
  }
  for (const t of body?.tools ?? []) {
    const p = jsonSchemaProblem(t?.function?.parameters, `Invalid schema for function '${t?.function?.name}'`);
    if (p) return p;
  }
  const fmt = body?.response_format;
  if (fmt?.type === "json_schema") {
    if (!fmt.json_schema?.name) return "Missing required parameter: 'response_format.json_schema.name'.";
    return jsonSchemaProblem(fmt.json_schema.schema, "Invalid schema for response_format");
  }
  return null;
}

/** The content of an answer asked for JSON: a value fitting the schema (json_schema) or an object (json_object). */
export function jsonAnswer(body: any): string | null {
  const fmt = body?.response_format;
  if (fmt?.type === "json_schema") return JSON.stringify(sampleFor(fmt.json_schema?.schema));
  if (fmt?.type === "json_object") return JSON.stringify({ answer: "Hello world!" });
  return null;
}

/** OpenAI's compacted response: the input's user messages, then one compaction item (opaque ciphertext). */
export function compactAnswer(body: any): Response {
  const input =
    typeof body?.input === "string"
      ? [{ role: "user", content: body.input }]
      : Array.isArray(body?.input)
        ? body.input
        : [];
  const users = input
    .filter((i: any) => (i?.type ?? "message") === "message" && i.role === "user")
    .map((i: any, n: number) => ({
      id: `msg_u${n}`,
      type: "message",
      status: "completed",
      role: "user",
      content: typeof i.content === "string" ? [{ type: "input_text", text: i.content }] : i.content,
    }));
  return Response.json({
    id: "resp_compact_1",
    object: "response.compaction",
    created_at: 1700000000,
    output: [...users, { id: "cmp_1", type: "compaction", encrypted_content: "gAAAAABopaque" }],
    usage: {
      input_tokens: 50,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 12,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 62,
    },
  });
}

/** A Responses API answer: text, or a function call when given function tools and no function output yet. */
export function responsesAnswer(body: any, model: string): Response {
  const tools = (body?.tools ?? []).filter((t: any) => t?.type === "function");
  const answered = Array.isArray(body?.input) && body.input.some((i: any) => i?.type === "function_call_output");
  const output =
    tools.length && !answered
      ? [
          {
            id: "fc_1",
            type: "function_call",
            status: "completed",
            call_id: "call_1",
            name: tools[0].name,
            arguments: '{"city":"Paris"}',
          },
        ]
      : [
          {
            id: "msg_1",
            type: "message",
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "Hello world!", annotations: [] }],
          },
        ];
  const response = {
    id: "resp_1",
    object: "response",
    created_at: 1700000000,
    status: "completed",
    model,
    output,
    previous_response_id: body?.previous_response_id ?? null,
    usage: {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 20,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 30,
    },
  };
  if (!body?.stream) return Response.json(response);
  let seq = 0;
  const ev = (type: string, f: object) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...f })}\n\n`;
  const item = output[0] as any;
  const frames = [
    ev("response.created", { response: { ...response, status: "in_progress", output: [], usage: null } }),
  ];
  if (item.type === "message") {
    frames.push(
      ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } }),
    );
    frames.push(
      ev("response.content_part.added", {
        item_id: item.id,
        output_index: 0,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] },
      }),
    );
    for (const d of ["Hello", " world!"])
      frames.push(ev("response.output_text.delta", { item_id: item.id, output_index: 0, content_index: 0, delta: d }));
    frames.push(
      ev("response.output_text.done", { item_id: item.id, output_index: 0, content_index: 0, text: "Hello world!" }),
    );
    frames.push(
      ev("response.content_part.done", { item_id: item.id, output_index: 0, content_index: 0, part: item.content[0] }),
    );
  } else {
    frames.push(
      ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", arguments: "" } }),
    );
    frames.push(
      ev("response.function_call_arguments.delta", { item_id: item.id, output_index: 0, delta: item.arguments }),
    );
    frames.push(
      ev("response.function_call_arguments.done", { item_id: item.id, output_index: 0, arguments: item.arguments }),
    );
  }
  frames.push(ev("response.output_item.done", { output_index: 0, item }));
  frames.push(ev("response.completed", { response }));
  return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
}

function streamAnswer(
  mock: MockUpstream,
  o: {
    chat: boolean;
    model: string;
    chunks: string[];
    tool: string | null;
    reasoning?: string | null;
    n?: number;
    slow: number;
    cut: boolean;
    eof?: boolean;
    usage: unknown;
  },
): Response {
  const enc = new TextEncoder();
  const frame = (obj: unknown) => enc.encode(`data: ${JSON.stringify(obj)}\n\n`);
  const indices = Array.from({ length: o.n ?? 1 }, (_, i) => i);
  const piece = (text: string, finish: string | null) =>
    o.chat
      ? {
          id: "chatcmpl-mock",
          object: "chat.completion.chunk",
          created: 1700000000,
          model: o.model,
          choices: indices.map((index) => ({ index, delta: { content: text }, finish_reason: finish })),
        }
      : {
          id: "cmpl-mock",
          object: "text_completion",
          created: 1700000000,
          model: o.model,
          choices: [{ index: 0, text, finish_reason: finish }],
        };
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      try {
        if (o.chat)
          controller.enqueue(
            frame({
              id: "chatcmpl-mock",
              object: "chat.completion.chunk",
              created: 1700000000,
              model: o.model,
              choices: indices.map((index) => ({
                index,
                delta: { role: "assistant", content: "" },
                finish_reason: null,
              })),
            }),
          );
        if (o.reasoning)
          controller.enqueue(
            frame({
              id: "chatcmpl-mock",
              object: "chat.completion.chunk",
              created: 1700000000,
              model: o.model,
              choices: indices.map((index) => ({
                index,
                delta: { reasoning_content: o.reasoning },
                finish_reason: null,
              })),
            }),
          );
        if (o.tool) {
          controller.enqueue(
            frame({
              id: "chatcmpl-mock",
              object: "chat.completion.chunk",
              created: 1700000000,
              model: o.model,
              choices: [
                {
                  index: 0,
                  delta: {
                    tool_calls: [
                      { index: 0, id: "call_1", type: "function", function: { name: o.tool, arguments: "" } },
                    ],
                  },
                  finish_reason: null,
                },
              ],
            }),
          );
          controller.enqueue(
            frame({
              id: "chatcmpl-mock",
              object: "chat.completion.chunk",
              created: 1700000000,
              model: o.model,
              choices: [
                {
                  index: 0,
                  delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] },
                  finish_reason: null,
                },
              ],
            }),
          );
          controller.enqueue(
            frame({
              id: "chatcmpl-mock",
              object: "chat.completion.chunk",
              created: 1700000000,
              model: o.model,
              choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }],
            }),
          );
        } else {
          for (let i = 0; i < o.chunks.length; i++) {
            if (o.slow) await sleep(o.slow);
            if (cancelled) return;
            if (o.cut && i === 2) {
              // Let the first pieces reach the reader, then reset the connection.
              await sleep(30);
              controller.error(new Error("connection reset"));
              return;
            }
            if (o.eof && i === 2) {
              controller.close();
              return;
            }
            controller.enqueue(frame(piece(o.chunks[i], null)));
          }
          controller.enqueue(frame(piece("", "stop")));
        }
        if (o.usage)
          controller.enqueue(
            frame({
              id: "chatcmpl-mock",
              object: "chat.completion.chunk",
              created: 1700000000,
              model: o.model,
              choices: [],
              usage: o.usage,
            }),
          );
        controller.enqueue(enc.encode("data: [DONE]\n\n"));
        controller.close();
      } catch {
        // The reader went away.
      }
    },
    cancel() {
      cancelled = true;
      mock.cancelled++;
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream" } });
}
