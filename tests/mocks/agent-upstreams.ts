// Upstreams for the agent tests (tests/agents/): each speaks one provider's public wire format in full —
// streamed and not, tool calls of the tools the client offers, structured output, usage with cache counts —
// and answers as agent-script.ts decides, so a real coding agent can run a tool round trip through the
// gateway. Every request is recorded (recorder.ts) for assertions on what reached the upstream.
//   OpenAI (with /v1/responses, as api.openai.com; or chat-only, answering 404 there like most compatible
//   servers), DeepSeek (chat only; cache hits reported as prompt_cache_hit_tokens), Claude (Messages API,
//   SSE from message_start to message_stop with cumulative usage in message_delta), Gemini
//   (generateContent and streamGenerateContent?alt=sse).
import { serve, sseResponse, type MockUpstream, type Recorded } from "./recorder.ts";
import { chatProblem } from "./openai-upstream.ts";
import { claudeRequestProblem, claudeSseFrame } from "./claude-upstream.ts";
import { geminiRequestProblem, geminiRoute } from "./gemini-upstream.ts";
import {
  decide,
  forcedTool,
  resultText,
  type AgentUsage,
  type OfferedTool,
  type Step,
  type Turn,
} from "./agent-script.ts";

export interface AgentMock extends MockUpstream {
  /** What every answer reports as used (the gateway must bill exactly this). */
  usage: AgentUsage;
  /** The answer to a prompt without directives. */
  text: string;
  /** The requests that reached a model endpoint (not HEAD /, not /v1/models). */
  calls(): Recorded[];
  /** The model calls answered with 200: the ones the gateway must bill. */
  answered(): Recorded[];
}

export const AGENT_USAGE: AgentUsage = { input: 40, cacheRead: 100, cacheWrite5m: 0, cacheWrite1h: 0, output: 8 };
export const CLAUDE_AGENT_USAGE: AgentUsage = {
  input: 40,
  cacheRead: 100,
  cacheWrite5m: 20,
  cacheWrite1h: 10,
  output: 8,
};

const MODEL_PATHS =
  /\/(chat\/completions|responses(\/compact|\/input_tokens)?|messages(\/count_tokens)?)$|:(generateContent|streamGenerateContent|countTokens)$/;

const isModelCall = (r: Recorded) =>
  r.method === "POST" && MODEL_PATHS.test(r.path) && !/count_tokens|input_tokens|countTokens/.test(r.path);

function agentServe(handler: (req: Request, rec: Recorded) => Response, usage: AgentUsage, text: string): AgentMock {
  const answered: Recorded[] = [];
  const up = serve((req, rec) => {
    const res = handler(req, rec);
    if (res.status === 200 && isModelCall(rec)) answered.push(rec);
    return res;
  });
  return Object.assign(up, { usage, text, calls: () => up.requests.filter(isModelCall), answered: () => answered });
}

function pieces(text: string): string[] {
  if (text.length < 6) return [text];
  const a = Math.ceil(text.length / 3);
  return [text.slice(0, a), text.slice(a, 2 * a), text.slice(2 * a)];
}

let seq = 0;
const id = (prefix: string) => `${prefix}_${(++seq).toString(36)}${Math.random().toString(36).slice(2, 10)}`;

// --- OpenAI chat completions (OpenAI, and OpenAI-compatible servers such as DeepSeek) ----------------------

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p: any) => (typeof p === "string" ? p : (p?.text ?? ""))).join("");
  return "";
}

function chatTurn(body: any): Turn {
  const msgs: any[] = body?.messages ?? [];
  const tools: OfferedTool[] = (body?.tools ?? []).map((t: any) =>
    t.type === "custom"
      ? { name: t.custom?.name, kind: "custom" }
      : { name: t.function?.name, kind: "function", schema: t.function?.parameters },
  );
  const fmt = body?.response_format;
  const choice = body?.tool_choice;
  return {
    userTexts: msgs.filter((m) => m.role === "user").map((m) => textOf(m.content)),
    tools,
    forced: forcedTool(tools, choice?.function?.name ?? choice?.custom?.name, choice === "required"),
    results: msgs.filter((m) => m.role === "tool").map((m) => textOf(m.content)),
    jsonSchema: fmt?.type === "json_schema" ? (fmt.json_schema?.schema ?? {}) : undefined,
    jsonObject: fmt?.type === "json_object",
  };
}

/** Models that, on api.openai.com, refuse max_tokens for max_completion_tokens. */
const REASONING_MODEL = /^(o\d|gpt-5|gpt-6)/;

function chatUsage(u: AgentUsage, flavour: "openai" | "deepseek") {
  const prompt = u.input + u.cacheRead;
  const base = { prompt_tokens: prompt, completion_tokens: u.output, total_tokens: prompt + u.output };
  if (flavour === "deepseek")
    return { ...base, prompt_cache_hit_tokens: u.cacheRead, prompt_cache_miss_tokens: u.input };
  return {
    ...base,
    prompt_tokens_details: { cached_tokens: u.cacheRead, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
  };
}

function chatAnswer(body: any, step: Step, usage: AgentUsage, flavour: "openai" | "deepseek"): Response {
  const model = String(body.model);
  const created = Math.floor(Date.now() / 1000);
  const cid = id("chatcmpl");
  const call =
    step.kind === "call"
      ? step.tool.kind === "custom"
        ? { id: id("call"), type: "custom", custom: { name: step.name, input: step.input } }
        : { id: id("call"), type: "function", function: { name: step.name, arguments: step.input } }
      : null;
  const finish = call ? "tool_calls" : "stop";
  const name = step.kind === "call" ? step.name : "";
  const u = chatUsage(usage, flavour);
  if (!body.stream) {
    const message = call
      ? { role: "assistant", content: null, tool_calls: [call] }
      : { role: "assistant", content: (step as { text: string }).text, refusal: null };
    return Response.json({
      id: cid,
      object: "chat.completion",
      created,
      model,
      choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
      usage: u,
      system_fingerprint: "fp_mock",
    });
  }
  const chunk = (delta: object, finish_reason: string | null = null) =>
    `data: ${JSON.stringify({ id: cid, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_mock", choices: [{ index: 0, delta, logprobs: null, finish_reason }] })}\n\n`;
  const frames = [chunk({ role: "assistant", content: "", refusal: null })];
  if (call?.type === "function") {
    frames.push(
      chunk({ tool_calls: [{ index: 0, id: call.id, type: "function", function: { name, arguments: "" } }] }),
    );
    for (const p of pieces((call as any).function.arguments))
      frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] }));
  } else if (call) {
    frames.push(
      chunk({
        tool_calls: [{ index: 0, id: call.id, type: "custom", custom: { name, input: (call as any).custom.input } }],
      }),
    );
  } else for (const p of pieces((step as { text: string }).text)) frames.push(chunk({ content: p }));
  frames.push(chunk({}, finish));
  // OpenAI sends usage only when asked (stream_options.include_usage); DeepSeek in the last chunk always.
  if (body.stream_options?.include_usage || flavour === "deepseek") {
    frames.push(
      `data: ${JSON.stringify({ id: cid, object: "chat.completion.chunk", created, model, choices: [], usage: u })}\n\n`,
    );
  }
  frames.push("data: [DONE]\n\n");
  return sseResponse(frames);
}

const openaiError = (status: number, message: string, code: string | null = null, param: string | null = null) =>
  Response.json({ error: { message, type: "invalid_request_error", param, code } }, { status });

// --- OpenAI Responses API ---------------------------------------------------------------------------------

interface StoredResponse {
  input: any[];
  output: any[];
}

function responsesTools(body: any, input: any[]): OfferedTool[] {
  const out: OfferedTool[] = [];
  const add = (t: any) => {
    if (t?.type === "function") out.push({ name: t.name, kind: "function", schema: t.parameters });
    else if (t?.type === "custom") out.push({ name: t.name, kind: "custom" });
    else if (t?.type === "namespace") for (const inner of t.tools ?? []) add(inner);
  };
  for (const t of body?.tools ?? []) add(t);
  // Codex's responses-lite form: the tools ride in an input item.
  for (const item of input) if (item?.type === "additional_tools") for (const t of item.tools ?? []) add(t);
  return out;
}

function responsesTurn(body: any, input: any[]): Turn {
  const userTexts = input
    .filter((i) => i?.role === "user" && (i.type === undefined || i.type === "message"))
    .map((i) => (typeof i.content === "string" ? i.content : textOf(i.content)));
  const results = input
    .filter((i) => i?.type === "function_call_output" || i?.type === "custom_tool_call_output")
    .map((i) => resultText(i.output));
  const fmt = body?.text?.format;
  const tools = responsesTools(body, input);
  const choice = body?.tool_choice;
  return {
    userTexts,
    tools,
    results,
    forced: forcedTool(tools, typeof choice === "object" ? choice?.name : null, choice === "required"),
    jsonSchema: fmt?.type === "json_schema" ? (fmt.schema ?? {}) : undefined,
    jsonObject: fmt?.type === "json_object",
  };
}

function responsesAnswer(
  body: any,
  input: any[],
  step: Step,
  usage: AgentUsage,
  store: Map<string, StoredResponse>,
  items: Map<string, any>,
): Response {
  const model = String(body.model);
  const rid = id("resp");
  const output: any[] = [];
  if (body.reasoning?.effort && body.reasoning.effort !== "none") {
    const encrypted = (body.include ?? []).includes("reasoning.encrypted_content");
    output.push({
      id: id("rs"),
      type: "reasoning",
      summary: [],
      ...(encrypted ? { encrypted_content: "gAAAAmockencryptedreasoning" } : {}),
    });
  }
  if (step.kind === "call" && step.tool.kind === "custom") {
    output.push({
      id: id("ctc"),
      type: "custom_tool_call",
      status: "completed",
      call_id: id("call"),
      name: step.name,
      input: step.input,
    });
  } else if (step.kind === "call") {
    output.push({
      id: id("fc"),
      type: "function_call",
      status: "completed",
      call_id: id("call"),
      name: step.name,
      arguments: step.input,
    });
  } else {
    output.push({
      id: id("msg"),
      type: "message",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: step.text, annotations: [], logprobs: [] }],
    });
  }
  const stored = body.store !== false;
  if (stored) {
    store.set(rid, { input, output });
    for (const item of output) items.set(item.id, item);
  }
  const response = {
    id: rid,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status: "completed",
    error: null,
    incomplete_details: null,
    model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    store: stored,
    tools: body.tools ?? [],
    tool_choice: body.tool_choice ?? "auto",
    text: body.text ?? { format: { type: "text" } },
    reasoning: body.reasoning ?? null,
    usage: {
      input_tokens: usage.input + usage.cacheRead,
      input_tokens_details: { cached_tokens: usage.cacheRead },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.cacheRead + usage.output,
    },
  };
  if (!body.stream) return Response.json(response);
  let n = 0;
  const ev = (type: string, f: object) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...f })}\n\n`;
  const frames = [
    ev("response.created", { response: { ...response, status: "in_progress", output: [], usage: null } }),
    ev("response.in_progress", { response: { ...response, status: "in_progress", output: [], usage: null } }),
  ];
  for (const [i, item] of output.entries()) {
    if (item.type === "message") {
      frames.push(
        ev("response.output_item.added", { output_index: i, item: { ...item, status: "in_progress", content: [] } }),
      );
      frames.push(
        ev("response.content_part.added", {
          item_id: item.id,
          output_index: i,
          content_index: 0,
          part: { type: "output_text", text: "", annotations: [] },
        }),
      );
      for (const d of pieces(item.content[0].text))
        frames.push(
          ev("response.output_text.delta", {
            item_id: item.id,
            output_index: i,
            content_index: 0,
            delta: d,
            logprobs: [],
          }),
        );
      frames.push(
        ev("response.output_text.done", {
          item_id: item.id,
          output_index: i,
          content_index: 0,
          text: item.content[0].text,
          logprobs: [],
        }),
      );
      frames.push(
        ev("response.content_part.done", {
          item_id: item.id,
          output_index: i,
          content_index: 0,
          part: item.content[0],
        }),
      );
    } else if (item.type === "function_call") {
      frames.push(
        ev("response.output_item.added", { output_index: i, item: { ...item, status: "in_progress", arguments: "" } }),
      );
      for (const d of pieces(item.arguments))
        frames.push(ev("response.function_call_arguments.delta", { item_id: item.id, output_index: i, delta: d }));
      frames.push(
        ev("response.function_call_arguments.done", {
          item_id: item.id,
          output_index: i,
          name: item.name,
          arguments: item.arguments,
        }),
      );
    } else if (item.type === "custom_tool_call") {
      frames.push(
        ev("response.output_item.added", { output_index: i, item: { ...item, status: "in_progress", input: "" } }),
      );
      for (const d of pieces(item.input))
        frames.push(ev("response.custom_tool_call_input.delta", { item_id: item.id, output_index: i, delta: d }));
      frames.push(ev("response.custom_tool_call_input.done", { item_id: item.id, output_index: i, input: item.input }));
    } else {
      frames.push(ev("response.output_item.added", { output_index: i, item }));
    }
    frames.push(ev("response.output_item.done", { output_index: i, item }));
  }
  frames.push(ev("response.completed", { response }));
  return sseResponse(frames);
}

/** The input with previous_response_id's conversation in front and item references resolved, or an error. */
function responsesInput(body: any, store: Map<string, StoredResponse>, items: Map<string, any>): any[] | Response {
  const own =
    typeof body.input === "string"
      ? [{ role: "user", content: body.input }]
      : Array.isArray(body.input)
        ? body.input
        : [];
  let before: any[] = [];
  if (body.previous_response_id) {
    const prev = store.get(body.previous_response_id);
    if (!prev)
      return openaiError(
        404,
        `Previous response with id '${body.previous_response_id}' not found.`,
        "previous_response_not_found",
        "previous_response_id",
      );
    before = [...prev.input, ...prev.output];
  }
  const out: any[] = [];
  for (const item of [...before, ...own]) {
    if (item?.type !== "item_reference") {
      out.push(item);
      continue;
    }
    const found = items.get(item.id);
    if (!found) return openaiError(404, `Item with id '${item.id}' not found.`, null, "input");
    out.push(found);
  }
  return out;
}

export interface OpenAIAgentOptions {
  /** Whether /v1/responses exists (api.openai.com) or answers 404 (a chat-only compatible server). */
  responses: boolean;
  /** "deepseek": DeepSeek's usage fields, function tools only. */
  flavour?: "openai" | "deepseek";
  key?: string;
  usage?: AgentUsage;
  text?: string;
}

export function startOpenAIAgentUpstream(o: OpenAIAgentOptions): AgentMock {
  const key = o.key ?? "sk-upstream";
  const flavour = o.flavour ?? "openai";
  const usage = o.usage ?? AGENT_USAGE;
  const text = o.text ?? (flavour === "deepseek" ? "Hello from DeepSeek." : "Hello from OpenAI.");
  const store = new Map<string, StoredResponse>();
  const items = new Map<string, any>();
  return agentServe(
    (_req, rec) => {
      if (rec.headers.authorization !== `Bearer ${key}`)
        return Response.json(
          {
            error: {
              message: "Incorrect API key provided.",
              type: "invalid_request_error",
              param: null,
              code: "invalid_api_key",
            },
          },
          { status: 401 },
        );
      const body = rec.body ?? {};
      if (rec.method === "GET" && rec.path === "/v1/models")
        return Response.json({
          object: "list",
          data: [{ id: "gpt-5.1", object: "model", created: 0, owned_by: "system" }],
        });
      if (rec.method === "POST" && rec.path === "/v1/chat/completions") {
        const problem = chatProblem(body);
        if (problem) return openaiError(400, problem);
        if (!Array.isArray(body.messages) || body.messages.length === 0)
          return openaiError(400, "Missing required parameter: 'messages'.", null, "messages");
        if (flavour === "deepseek") {
          const bad = (body.tools ?? []).findIndex((t: any) => t?.type !== "function");
          if (bad >= 0)
            return openaiError(
              400,
              `Failed to deserialize the JSON body into the target type: tools[${bad}].type: unknown variant \`${body.tools[bad]?.type}\`, expected \`function\``,
            );
        } else if (body.max_tokens !== undefined && REASONING_MODEL.test(String(body.model))) {
          return openaiError(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "unsupported_parameter",
            "max_tokens",
          );
        }
        return chatAnswer(body, decide(chatTurn(body), text), usage, flavour);
      }
      if (o.responses && rec.method === "POST" && rec.path === "/v1/responses") {
        const input = responsesInput(body, store, items);
        if (input instanceof Response) return input;
        return responsesAnswer(body, input, decide(responsesTurn(body, input), text), usage, store, items);
      }
      return openaiError(404, `Invalid URL (${rec.method} ${rec.path})`);
    },
    usage,
    text,
  );
}

// --- Claude Messages API ----------------------------------------------------------------------------------

function claudeTurn(body: any): Turn {
  const msgs: any[] = body?.messages ?? [];
  const blocks = (m: any): any[] =>
    typeof m.content === "string" ? [{ type: "text", text: m.content }] : Array.isArray(m.content) ? m.content : [];
  const user = msgs.filter((m) => m.role === "user");
  const tools: OfferedTool[] = (body?.tools ?? [])
    .filter((t: any) => !t.type || t.type === "custom")
    .map((t: any) => ({ name: t.name, kind: "function", schema: t.input_schema }));
  const fmt = body?.output_config?.format ?? body?.output_format;
  const choice = body?.tool_choice;
  return {
    userTexts: user.map((m) =>
      blocks(m)
        .filter((b) => b.type === "text")
        .map((b) => b.text)
        .join("\n"),
    ),
    tools,
    forced: forcedTool(tools, choice?.type === "tool" ? choice.name : null, choice?.type === "any"),
    results: user.flatMap((m) =>
      blocks(m)
        .filter((b) => b.type === "tool_result")
        .map((b) => resultText(b.content)),
    ),
    jsonSchema: fmt?.type === "json_schema" ? fmt.schema : undefined,
  };
}

function claudeUsage(u: AgentUsage) {
  return {
    input_tokens: u.input,
    cache_creation_input_tokens: u.cacheWrite5m + u.cacheWrite1h,
    cache_read_input_tokens: u.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite5m, ephemeral_1h_input_tokens: u.cacheWrite1h },
    output_tokens: u.output,
    service_tier: "standard",
  };
}

function claudeAnswer(body: any, step: Step, usage: AgentUsage): Response {
  const model = String(body.model);
  const thinks = body.thinking && body.thinking.type !== "disabled";
  const content: any[] = [];
  // With display "omitted" the API sends the signature of the thinking and none of its text.
  if (thinks)
    content.push({
      type: "thinking",
      thinking: body.thinking.display === "omitted" ? "" : "Considering the request.",
      signature: "EqMBCkgIBhABGAIiQMocksignature",
    });
  if (step.kind === "call")
    content.push({ type: "tool_use", id: id("toolu"), name: step.name, input: step.args ?? {} });
  else content.push({ type: "text", text: step.text });
  const stop = step.kind === "call" ? "tool_use" : "end_turn";
  const full = claudeUsage(usage);
  const mid = id("msg");
  if (!body.stream)
    return Response.json({
      id: mid,
      type: "message",
      role: "assistant",
      model,
      content,
      stop_reason: stop,
      stop_sequence: null,
      usage: full,
    });
  const evs: any[] = [
    {
      type: "message_start",
      message: {
        id: mid,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...full, output_tokens: 1 },
      },
    },
  ];
  for (const [index, block] of content.entries()) {
    if (block.type === "thinking") {
      evs.push({
        type: "content_block_start",
        index,
        content_block: { type: "thinking", thinking: "", signature: "" },
      });
      if (block.thinking)
        evs.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: block.thinking } });
      evs.push({ type: "content_block_delta", index, delta: { type: "signature_delta", signature: block.signature } });
    } else if (block.type === "text") {
      evs.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
      for (const p of pieces(block.text))
        evs.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: p } });
    } else {
      evs.push({
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      });
      for (const p of pieces(JSON.stringify(block.input)))
        evs.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: p } });
    }
    evs.push({ type: "content_block_stop", index });
    if (index === 0) evs.push({ type: "ping" });
  }
  // The usage of message_delta is cumulative: the input counts again, and the final output count.
  const { cache_creation: _c, service_tier: _s, ...delta } = full;
  evs.push({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: delta });
  evs.push({ type: "message_stop" });
  return sseResponse(evs.map(claudeSseFrame));
}

export function startClaudeAgentUpstream(o: { key?: string; usage?: AgentUsage; text?: string } = {}): AgentMock {
  const key = o.key ?? "claude-key";
  const usage = o.usage ?? CLAUDE_AGENT_USAGE;
  const text = o.text ?? "Hello from Claude.";
  return agentServe(
    (_req, rec) => {
      const err = (status: number, type: string, message: string) =>
        Response.json({ type: "error", error: { type, message }, request_id: "req_mock" }, { status });
      if (rec.headers["x-api-key"] !== key) return err(401, "authentication_error", "invalid x-api-key");
      if (rec.method !== "POST" || rec.path !== "/v1/messages") return err(404, "not_found_error", "Not found");
      if (!rec.headers["anthropic-version"])
        return err(400, "invalid_request_error", "anthropic-version: header is required");
      const body = rec.body;
      // Mid-conversation system messages are valid; alternation and the first role are about the turns around them.
      const turns = Array.isArray(body?.messages)
        ? body.messages.filter((m: any) => m?.role !== "system")
        : body?.messages;
      const problem = claudeRequestProblem({ ...body, messages: turns });
      if (problem) return err(400, "invalid_request_error", problem);
      return claudeAnswer(body, decide(claudeTurn(body), text), usage);
    },
    usage,
    text,
  );
}

// --- Gemini API -------------------------------------------------------------------------------------------

function geminiTurn(body: any): Turn {
  const contents: any[] = body?.contents ?? [];
  const user = contents.filter((c) => (c.role ?? "user") === "user");
  const tools: OfferedTool[] = (body?.tools ?? []).flatMap((t: any) =>
    (t.functionDeclarations ?? []).map((d: any) => ({
      name: d.name,
      kind: "function",
      schema: d.parametersJsonSchema ?? d.parameters,
    })),
  );
  const g = body?.generationConfig ?? {};
  const json = g.responseMimeType === "application/json";
  const schema = g.responseJsonSchema ?? g.responseSchema;
  const calling = body?.toolConfig?.functionCallingConfig;
  const allowed: string[] = calling?.allowedFunctionNames ?? [];
  return {
    forced:
      calling?.mode === "ANY"
        ? forcedTool(
            allowed.length ? tools.filter((t) => allowed.includes(t.name)) : tools,
            allowed.length === 1 ? allowed[0] : null,
            true,
          )
        : undefined,
    userTexts: user.map((c) =>
      (c.parts ?? [])
        .filter((p: any) => typeof p.text === "string")
        .map((p: any) => p.text)
        .join("\n"),
    ),
    tools,
    results: user.flatMap((c) =>
      (c.parts ?? []).filter((p: any) => p.functionResponse).map((p: any) => resultText(p.functionResponse.response)),
    ),
    jsonSchema: json && schema ? schema : undefined,
    jsonObject: json && !schema,
  };
}

function geminiAnswer(body: any, model: string, stream: boolean, step: Step, usage: AgentUsage): Response {
  const prompt = usage.input + usage.cacheRead;
  const usageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: usage.output,
    totalTokenCount: prompt + usage.output,
    ...(usage.cacheRead ? { cachedContentTokenCount: usage.cacheRead } : {}),
    promptTokensDetails: [{ modality: "TEXT", tokenCount: prompt }],
  };
  const part =
    step.kind === "call"
      ? { functionCall: { name: step.name, args: step.args ?? {} }, thoughtSignature: "Cmockthoughtsignature" }
      : { text: step.text };
  const candidate = (parts: object[], finish?: string) => ({
    content: { parts, role: "model" },
    index: 0,
    ...(finish ? { finishReason: finish } : {}),
  });
  const responseId = id("gem");
  if (!stream)
    return Response.json({ candidates: [candidate([part], "STOP")], usageMetadata, modelVersion: model, responseId });
  const chunks: object[] = [];
  if (step.kind === "call")
    chunks.push({ candidates: [candidate([part], "STOP")], usageMetadata, modelVersion: model, responseId });
  else {
    const ps = pieces(step.text);
    for (const [i, p] of ps.entries()) {
      const last = i === ps.length - 1;
      chunks.push({
        candidates: [candidate([{ text: p }], last ? "STOP" : undefined)],
        usageMetadata: last ? usageMetadata : { promptTokenCount: prompt, totalTokenCount: prompt },
        modelVersion: model,
        responseId,
      });
    }
  }
  return sseResponse(chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`));
}

export function startGeminiAgentUpstream(o: { key?: string; usage?: AgentUsage; text?: string } = {}): AgentMock {
  const key = o.key ?? "gemini-key";
  const usage = o.usage ?? AGENT_USAGE;
  const text = o.text ?? "Hello from Gemini.";
  return agentServe(
    (_req, rec) => {
      const err = (code: number, status: string, message: string) =>
        Response.json({ error: { code, message, status } }, { status: code });
      const given = rec.headers["x-goog-api-key"] ?? new URLSearchParams(rec.search).get("key");
      if (given !== key) return err(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.");
      const route = geminiRoute(rec.path);
      if (!route || rec.method !== "POST") return err(404, "NOT_FOUND", "not found");
      if (route.method === "countTokens") return Response.json({ totalTokens: usage.input + usage.cacheRead });
      if (route.method !== "generateContent" && route.method !== "streamGenerateContent")
        return err(404, "NOT_FOUND", `method ${route.method} not found`);
      const stream = route.method === "streamGenerateContent";
      if (stream && !rec.search.includes("alt=sse"))
        return err(400, "INVALID_ARGUMENT", "this mock speaks alt=sse only");
      const problem = geminiRequestProblem(rec.body);
      if (problem) return err(400, "INVALID_ARGUMENT", problem);
      return geminiAnswer(rec.body, route.model, stream, decide(geminiTurn(rec.body), text), usage);
    },
    usage,
    text,
  );
}

/** The model a recorded call asked the upstream for (Gemini names it in the path). */
export function modelOf(rec: Recorded): string | undefined {
  return rec.body?.model ?? geminiRoute(rec.path)?.model;
}
