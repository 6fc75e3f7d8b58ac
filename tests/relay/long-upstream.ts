// An upstream that answers long, in the four wire formats the relay sends (OpenAI chat, Responses, Claude
// Messages, Gemini generateContent): as many output tokens as the request's max-tokens field allows, LONG when
// it names none, and LONG whatever it names when the model's name contains "-ignore" (an upstream that does
// not honour the bound). Each word of the answer is one token; usage reports what was generated. It records the
// bound each request named, in that format's own field.
export const LONG = 100_000;
/** Output tokens per stream chunk. */
export const WORDS_PER_CHUNK = 10;
const WORD = " hi";

export interface LongSeen {
  path: string;
  model: string;
  field: string | null;
  bound: number | null;
  body: any;
}

export interface LongUpstream {
  url: string;
  seen: LongSeen[];
  /** streams the gateway stopped reading and cancelled */
  cancelled: number;
  /** output tokens handed to the gateway, by all streams */
  streamedTokens: number;
  stop(): void;
}

const sse = (data: unknown, event?: string) => (event ? `event: ${event}\n` : "") + `data: ${JSON.stringify(data)}\n\n`;

/** The bound a request named, in its format's field. */
function boundOf(path: string, body: any): { field: string | null; bound: number | null } {
  const pick = (field: string, v: unknown) => (typeof v === "number" ? { field, bound: v } : null);
  if (path.includes(":generateContent") || path.includes(":streamGenerateContent"))
    return (
      pick("generationConfig.maxOutputTokens", body?.generationConfig?.maxOutputTokens) ?? { field: null, bound: null }
    );
  if (path === "/v1/messages") return pick("max_tokens", body?.max_tokens) ?? { field: null, bound: null };
  if (path === "/v1/responses")
    return pick("max_output_tokens", body?.max_output_tokens) ?? { field: null, bound: null };
  return (
    pick("max_completion_tokens", body?.max_completion_tokens)
    ?? pick("max_tokens", body?.max_tokens) ?? { field: null, bound: null }
  );
}

export function startLongUpstream(): LongUpstream {
  const up: LongUpstream = { url: "", seen: [], cancelled: 0, streamedTokens: 0, stop: () => server.stop(true) };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 60,
    async fetch(req) {
      const url = new URL(req.url);
      const path = url.pathname;
      const body: any = await req.json().catch(() => ({}));
      const model = String(body?.model ?? /models\/([^:]+):/.exec(path)?.[1] ?? "");
      const { field, bound } = boundOf(path, body);
      up.seen.push({ path, model, field, bound, body });
      const n = model.includes("-ignore") || bound === null ? LONG : Math.min(LONG, bound);
      const prompt = 10;
      const gemini = path.includes("GenerateContent") || path.includes(":generateContent");
      const stream = body?.stream === true || path.includes(":streamGenerateContent");
      if (!stream) return Response.json(whole(path, gemini, model, n, prompt));
      let gone = false;
      const frames = framesOf(path, gemini, model, n, prompt, body);
      const rs = new ReadableStream({
        type: "direct",
        async pull(controller: any) {
          let i = 0;
          for (const f of frames) {
            if (gone) return;
            const sent = controller.write(f.text);
            up.streamedTokens += f.tokens;
            if (typeof sent !== "number") await sent;
            // Paced like a model (a millisecond per 80 tokens): a gateway that stops reading is seen stopping.
            if (++i % 8 === 0) await Bun.sleep(1);
          }
          controller.close();
        },
        cancel() {
          gone = true;
          up.cancelled++;
        },
      } as any);
      return new Response(rs, { headers: { "content-type": "text/event-stream" } });
    },
  });
  up.url = `http://127.0.0.1:${server.port}`;
  return up;
}

function whole(path: string, gemini: boolean, model: string, n: number, prompt: number): unknown {
  const text = WORD.repeat(n);
  if (gemini) {
    return {
      candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "MAX_TOKENS", index: 0 }],
      usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: n, totalTokenCount: prompt + n },
      modelVersion: model,
    };
  }
  if (path === "/v1/messages") {
    return {
      id: "msg_long",
      type: "message",
      role: "assistant",
      model,
      content: [{ type: "text", text }],
      stop_reason: "max_tokens",
      stop_sequence: null,
      usage: { input_tokens: prompt, output_tokens: n },
    };
  }
  if (path === "/v1/responses") {
    return {
      id: "resp_long",
      object: "response",
      created_at: 1700000000,
      status: "incomplete",
      model,
      output: [
        {
          type: "message",
          id: "msg_long",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text, annotations: [] }],
        },
      ],
      usage: { input_tokens: prompt, output_tokens: n, total_tokens: prompt + n },
    };
  }
  return {
    id: "chatcmpl-long",
    object: "chat.completion",
    created: 1700000000,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "length" }],
    usage: { prompt_tokens: prompt, completion_tokens: n, total_tokens: prompt + n },
  };
}

/** The stream's frames, made as they are pulled (a 100,000-token stream is never built whole). */
function* framesOf(
  path: string,
  gemini: boolean,
  model: string,
  n: number,
  prompt: number,
  body: any,
): Generator<{ text: string; tokens: number }> {
  const chunks = Math.ceil(n / WORDS_PER_CHUNK);
  const piece = (i: number) => Math.min(WORDS_PER_CHUNK, n - i * WORDS_PER_CHUNK);
  if (gemini) {
    for (let i = 0; i < chunks; i++) {
      const last = i === chunks - 1;
      const done = (i + 1) * WORDS_PER_CHUNK;
      yield {
        tokens: piece(i),
        text: sse({
          candidates: [
            {
              content: { role: "model", parts: [{ text: WORD.repeat(piece(i)) }] },
              index: 0,
              ...(last ? { finishReason: "MAX_TOKENS" } : {}),
            },
          ],
          usageMetadata: {
            promptTokenCount: prompt,
            candidatesTokenCount: Math.min(n, done),
            totalTokenCount: prompt + Math.min(n, done),
          },
          modelVersion: model,
        }),
      };
    }
    return;
  }
  if (path === "/v1/messages") {
    yield {
      tokens: 0,
      text: sse(
        {
          type: "message_start",
          message: {
            id: "msg_long",
            type: "message",
            role: "assistant",
            model,
            content: [],
            stop_reason: null,
            usage: { input_tokens: prompt, output_tokens: 1 },
          },
        },
        "message_start",
      ),
    };
    yield {
      tokens: 0,
      text: sse(
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        "content_block_start",
      ),
    };
    for (let i = 0; i < chunks; i++)
      yield {
        tokens: piece(i),
        text: sse(
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: WORD.repeat(piece(i)) } },
          "content_block_delta",
        ),
      };
    yield { tokens: 0, text: sse({ type: "content_block_stop", index: 0 }, "content_block_stop") };
    yield {
      tokens: 0,
      text: sse(
        {
          type: "message_delta",
          delta: { stop_reason: "max_tokens", stop_sequence: null },
          usage: { output_tokens: n },
        },
        "message_delta",
      ),
    };
    yield { tokens: 0, text: sse({ type: "message_stop" }, "message_stop") };
    return;
  }
  if (path === "/v1/responses") {
    const resp = { id: "resp_long", object: "response", created_at: 1700000000, model, output: [] as unknown[] };
    yield {
      tokens: 0,
      text: sse({ type: "response.created", response: { ...resp, status: "in_progress" } }, "response.created"),
    };
    for (let i = 0; i < chunks; i++)
      yield {
        tokens: piece(i),
        text: sse(
          {
            type: "response.output_text.delta",
            item_id: "msg_long",
            output_index: 0,
            content_index: 0,
            delta: WORD.repeat(piece(i)),
          },
          "response.output_text.delta",
        ),
      };
    yield {
      tokens: 0,
      text: sse(
        {
          type: "response.completed",
          response: {
            ...resp,
            status: "incomplete",
            usage: { input_tokens: prompt, output_tokens: n, total_tokens: prompt + n },
          },
        },
        "response.completed",
      ),
    };
    return;
  }
  for (let i = 0; i < chunks; i++) {
    const last = i === chunks - 1;
    yield {
      tokens: piece(i),
      text: sse({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model,
        choices: [{ index: 0, delta: { content: WORD.repeat(piece(i)) }, finish_reason: last ? "length" : null }],
      }),
    };
  }
  if (body?.stream_options?.include_usage)
    yield {
      tokens: 0,
      text: sse({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model,
        choices: [],
        usage: { prompt_tokens: prompt, completion_tokens: n, total_tokens: prompt + n },
      }),
    };
  yield { tokens: 0, text: "data: [DONE]\n\n" };
}
