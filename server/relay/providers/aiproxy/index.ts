// AI Proxy knowledge base (channel type 21, one-api's "AI Proxy Library"): the last user message is asked
// of the knowledge base named by the channel's `other` (POST {base}/api/library/ask with a bearer key).
// The answer's source documents are appended as a numbered list of links. The API reports no usage: the
// gateway counts the prompt and the answer.
import type { ProviderAdaptor, SseEvent } from "../types.ts";
import { AppError } from "../../../http/errors.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import {
  ConvertedStream,
  chatCompletion,
  contentText,
  providerErrorMessage,
  rejectErrorBody,
} from "../openai/chunks.ts";

interface LibraryDocument {
  title?: string;
  url?: string;
}

/** The documents an answer drew on, as Markdown links under a heading (one-api's layout, in English). */
export function documentsMarkdown(docs: LibraryDocument[] | undefined): string {
  if (!Array.isArray(docs) || docs.length === 0) return "";
  return "\n\nReferences:\n" + docs.map((d, i) => `${i + 1}. [${d?.title ?? ""}](${d?.url ?? ""})`).join("\n") + "\n";
}

class LibraryStream extends ConvertedStream {
  private docs: LibraryDocument[] = [];
  protected onJson(j: any, ev: SseEvent): string {
    if (j?.errCode) return this.error(String(j.message ?? `error ${j.errCode}`));
    if (Array.isArray(j?.documents) && j.documents.length) this.docs = j.documents;
    let out = this.text(typeof j?.content === "string" ? j.content : "");
    if (j?.finish) out += this.text(documentsMarkdown(this.docs)) + this.finish("stop");
    return out;
  }
}

export const aiproxyAdaptor: ProviderAdaptor = {
  kind: "aiproxy",
  supports: (mode) => mode === "chat",
  buildRequest(call, body) {
    const libraryId = (call.channel.other ?? "").trim();
    if (!libraryId)
      throw new AppError(
        500,
        "the AI Proxy channel has no knowledge base ID (the channel's Knowledge base ID field)",
        "channel_misconfigured",
      );
    const messages = Array.isArray(body?.messages) ? body.messages : [];
    const query = contentText(messages.at(-1)?.content);
    return {
      url: `${call.baseUrl}/api/library/ask`,
      headers: { "content-type": "application/json", authorization: `Bearer ${call.key}` },
      body: JSON.stringify({ model: call.upstreamModel, query, libraryId, stream: call.stream }),
    };
  },
  async send(_call, url, init) {
    return rejectErrorBody(await fetch(url, init), (j) =>
      j?.errCode
        ? {
            status: j.errCode === 401 || j.errCode === 403 ? j.errCode : 400,
            message: String(j.message ?? `error ${j.errCode}`),
            code: j.errCode,
          }
        : null,
    );
  },
  parseResponse(call, json) {
    const content = String(json?.answer ?? "") + documentsMarkdown(json?.documents);
    return { body: chatCompletion(call.requestModel, { content }, "stop", null), usage: null };
  },
  generatedText: (_call, json) => String(json?.answer ?? "") + documentsMarkdown(json?.documents),
  streamMapper: (call) => new LibraryStream(call),
  errorMessage: providerErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[21],
};
