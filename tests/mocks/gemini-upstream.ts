// A stand-in for the Gemini API (generativelanguage): /{version}/models/{model}:{method} with the key
// in x-goog-api-key or ?key=. Answers generateContent, streamGenerateContent?alt=sse and
// batchEmbedContents with recorded-shape bodies. Tools and a last turn without a functionResponse
// produce a functionCall; everything else text. Models named with "-nousage" never send usageMetadata;
// "-blocked" ones refuse the prompt as Gemini's safety filter does (promptFeedback.blockReason, no
// candidates, the prompt counted), streamed as that one chunk.
// batchEmbedContents refuses more than 100 requests, as the real API does; a text "#<n>" embeds as
// [n, 0.2, 0.3] (so tests can follow each input), and a batch holding the text "#fail" answers 500.
// Like the API it answers candidateCount candidates, a thought part first when thinkingConfig.includeThoughts
// is set, and JSON fitting responseSchema / responseJsonSchema with responseMimeType application/json.
// A request naming a context cache (cachedContent) counts the cache's tokens in its prompt and reports them
// as cachedContentTokenCount (GEMINI_CACHED), as the API does. Gemini 3 models sign their function calls
// (thoughtSignature, GEMINI_SIGNATURE) and, as the API does, refuse a model turn whose first function call
// comes back without a signature.
import { serve, sseResponse, type MockUpstream } from "./recorder.ts";
import { sampleFor } from "./schema.ts";

export const GEMINI_THOUGHT = "Thinking it over.";

/** The text of a plain answer: JSON when asked for it. */
function answerText(body: any): string {
  const g = body?.generationConfig ?? {};
  if (g.responseMimeType !== "application/json") return GEMINI_TEXT;
  return JSON.stringify(
    g.responseJsonSchema || g.responseSchema
      ? sampleFor(g.responseJsonSchema ?? g.responseSchema)
      : { answer: GEMINI_TEXT },
  );
}

const thoughts = (body: any) => body?.generationConfig?.thinkingConfig?.includeThoughts === true;
const candidates = (body: any) => Math.max(1, Number(body?.generationConfig?.candidateCount) || 1);

export const GEMINI_TEXT = "Hello from Gemini.";
/** The thought signature a Gemini 3 model gives its function calls. */
export const GEMINI_SIGNATURE = "CiQBmockthoughtsignature==";
const signs = (model: string) => /gemini-3/.test(model);
const callPart = (name: string, model: string) => ({
  functionCall: { name, args: { city: "Paris" } },
  ...(signs(model) ? { thoughtSignature: GEMINI_SIGNATURE } : {}),
});
/** batchEmbedContents' limit on requests per call. */
export const EMBED_BATCH_MAX = 100;
export const GEMINI_USAGE = {
  promptTokenCount: 9,
  candidatesTokenCount: 5,
  thoughtsTokenCount: 2,
  totalTokenCount: 16,
};
/** The tokens a request's cachedContent adds to its prompt, all read from the cache. */
export const GEMINI_CACHED = 4000;

function wantsTool(body: any): boolean {
  const decls = (body?.tools ?? []).flatMap((t: any) => t.functionDeclarations ?? []);
  if (decls.length === 0 || body?.toolConfig?.functionCallingConfig?.mode === "NONE") return false;
  const last = body.contents?.[body.contents.length - 1];
  return !(last?.parts ?? []).some((p: any) => p.functionResponse);
}

export function geminiRequestProblem(body: any): string | null {
  if (!Array.isArray(body?.contents) || body.contents.length === 0)
    return "* GenerateContentRequest.contents: contents is not specified";
  for (const c of body.contents) {
    if (c.role !== undefined && c.role !== "user" && c.role !== "model") return `Please use a valid role: user, model.`;
    if (!Array.isArray(c.parts) || c.parts.length === 0)
      return "* GenerateContentRequest.contents.parts: contents.parts must not be empty.";
  }
  return null;
}

/** Gemini 3's check of the signatures it handed out. */
function signatureProblem(body: any, model: string): string | null {
  if (!signs(model)) return null;
  for (const [i, c] of (body?.contents ?? []).entries()) {
    const first = (c.parts ?? []).findIndex((p: any) => p.functionCall);
    if (c.role === "model" && first !== -1 && !c.parts[first].thoughtSignature) {
      return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${c.parts[first].functionCall.name}\` , position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
    }
  }
  return null;
}

export function geminiReply(body: any, model: string) {
  const tool = wantsTool(body);
  const decl = tool ? body.tools.flatMap((t: any) => t.functionDeclarations)[0] : null;
  const parts: object[] = tool ? [callPart(decl.name, model)] : [{ text: answerText(body) }];
  if (thoughts(body)) parts.unshift({ text: GEMINI_THOUGHT, thought: true });
  return {
    candidates: Array.from({ length: candidates(body) }, (_, index) => ({
      content: { parts, role: "model" },
      finishReason: "STOP",
      index,
      safetyRatings: [{ category: "HARM_CATEGORY_HARASSMENT", probability: "NEGLIGIBLE" }],
    })),
    usageMetadata: GEMINI_USAGE,
    modelVersion: model,
    responseId: "resp-gem-1",
  };
}

export function geminiChunks(body: any, model: string): object[] {
  const tool = wantsTool(body);
  const decl = tool ? body.tools.flatMap((t: any) => t.functionDeclarations)[0] : null;
  const usage1 = { promptTokenCount: 9, totalTokenCount: 9 };
  const n = candidates(body);
  const each = (parts: object[], finish?: string) =>
    Array.from({ length: n }, (_, index) => ({
      content: { parts, role: "model" },
      index,
      ...(finish ? { finishReason: finish } : {}),
    }));
  const text = answerText(body);
  const [first, rest] = text === GEMINI_TEXT ? ["Hello", " from Gemini."] : [text, ""];
  const out: object[] = [];
  if (thoughts(body))
    out.push({
      candidates: each([{ text: GEMINI_THOUGHT, thought: true }]),
      usageMetadata: usage1,
      modelVersion: model,
      responseId: "resp-gem-s",
    });
  out.push({
    candidates: each([{ text: first }]),
    usageMetadata: usage1,
    modelVersion: model,
    responseId: "resp-gem-s",
  });
  if (tool) {
    out.push({
      candidates: each([callPart(decl.name, model)], "STOP"),
      usageMetadata: GEMINI_USAGE,
      modelVersion: model,
      responseId: "resp-gem-s",
    });
  } else {
    out.push({
      candidates: each(rest ? [{ text: rest }] : [], "STOP"),
      usageMetadata: GEMINI_USAGE,
      modelVersion: model,
      responseId: "resp-gem-s",
    });
  }
  return out;
}

/** Parses "/v1beta/models/gemini-2.5-flash:generateContent" (also under a Vertex publisher path). */
export function geminiRoute(path: string): { version: string; model: string; method: string } | null {
  const m = /^\/(v1(?:beta|alpha)?)\/(?:.*\/)?models\/([^/:]+):([A-Za-z]+)$/.exec(path);
  return m ? { version: m[1]!, model: decodeURIComponent(m[2]!), method: m[3]! } : null;
}

export function geminiAnswer(route: { model: string; method: string }, body: any, search: string): Response {
  if (route.method === "batchEmbedContents") {
    const requests: any[] = body?.requests ?? [];
    if (requests.length > EMBED_BATCH_MAX) {
      return Response.json(
        {
          error: {
            code: 400,
            message: `* BatchEmbedContentsRequest.requests: at most ${EMBED_BATCH_MAX} requests can be in one batch\n`,
            status: "INVALID_ARGUMENT",
          },
        },
        { status: 400 },
      );
    }
    const texts = requests.map((r) => (r?.content?.parts ?? []).map((p: any) => p.text ?? "").join(""));
    if (texts.includes("#fail"))
      return Response.json(
        { error: { code: 500, message: "Internal error encountered.", status: "INTERNAL" } },
        { status: 500 },
      );
    return Response.json({
      embeddings: texts.map((t, i) => ({ values: [/^#\d+$/.test(t) ? Number(t.slice(1)) : 0.1 * (i + 1), 0.2, 0.3] })),
    });
  }
  if (route.method === "embedContent") return Response.json({ embedding: { values: [0.1, 0.2, 0.3] } });
  const problem = geminiRequestProblem(body) ?? signatureProblem(body, route.model);
  if (problem)
    return Response.json({ error: { code: 400, message: problem, status: "INVALID_ARGUMENT" } }, { status: 400 });
  const usage = (r: any) => {
    if (route.model.includes("-nousage")) delete r.usageMetadata;
    else if (typeof body?.cachedContent === "string" && r.usageMetadata) {
      const m = r.usageMetadata;
      r.usageMetadata = {
        ...m,
        promptTokenCount: m.promptTokenCount + GEMINI_CACHED,
        cachedContentTokenCount: GEMINI_CACHED,
        totalTokenCount: m.totalTokenCount + GEMINI_CACHED,
      };
    }
    return r;
  };
  if (route.model.includes("-blocked")) {
    const blocked = {
      promptFeedback: {
        blockReason: "SAFETY",
        safetyRatings: [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "HIGH" }],
      },
      usageMetadata: {
        promptTokenCount: GEMINI_USAGE.promptTokenCount,
        totalTokenCount: GEMINI_USAGE.promptTokenCount,
      },
      modelVersion: route.model,
    };
    if (route.method === "streamGenerateContent")
      return sseResponse([`data: ${JSON.stringify(usage(blocked))}\r\n\r\n`]);
    return Response.json(usage(blocked));
  }
  if (route.method === "streamGenerateContent") {
    if (!search.includes("alt=sse"))
      return Response.json(
        { error: { code: 400, message: "test mock only speaks alt=sse", status: "INVALID_ARGUMENT" } },
        { status: 400 },
      );
    return sseResponse(geminiChunks(body, route.model).map((c) => `data: ${JSON.stringify(usage(c))}\r\n\r\n`));
  }
  if (route.method === "generateContent") return Response.json(usage(geminiReply(body, route.model)));
  return Response.json({ error: { code: 404, message: "method not found", status: "NOT_FOUND" } }, { status: 404 });
}

export function startGeminiUpstream(opts: { key?: string } = {}): MockUpstream {
  const key = opts.key ?? "gemini-key";
  return serve((req, rec) => {
    const given = rec.headers["x-goog-api-key"] ?? new URLSearchParams(rec.search).get("key");
    if (given !== key) {
      return Response.json(
        {
          error: { code: 400, message: "API key not valid. Please pass a valid API key.", status: "INVALID_ARGUMENT" },
        },
        { status: 400 },
      );
    }
    if (rec.method === "GET" && /^\/v1(beta)?\/models$/.test(rec.path)) {
      return Response.json({
        models: [
          { name: "models/gemini-2.5-flash", supportedGenerationMethods: ["generateContent"] },
          { name: "models/text-embedding-004" },
        ],
      });
    }
    const route = geminiRoute(rec.path);
    if (!route)
      return Response.json({ error: { code: 404, message: "not found", status: "NOT_FOUND" } }, { status: 404 });
    return geminiAnswer(route, rec.body, rec.search);
  });
}
