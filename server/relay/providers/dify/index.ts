// Dify (channel type 37): a Dify app's chat API, POST {base}/v1/chat-messages with the app's key. Dify
// keeps the conversation itself (conversation_id, per `user`), while OpenAI clients resend the whole
// history each turn. So each gateway user is a Dify user ("user-<id>", or the request's `user`), and the
// conversation Dify answered in is remembered under a digest of the history the client will send back:
// the next turn continues that conversation with only its new message. A history the gateway has not
// seen (another instance, a restart, an edited message) starts a new conversation with the whole
// transcript as the query. Images go as remote URLs, or are uploaded first (data URLs).
//
// Streamed events: message / agent_message (text), agent_thought (reasoning), message_file (an image
// link), message_replace (moderated text), message_end (usage), error; workflow, node, ping and tts
// events carry nothing for the client.
import { createHash } from "node:crypto";
import type { ProviderAdaptor, ProviderCall, SseEvent } from "../types.ts";
import { DEFAULT_CHANNEL_MODELS } from "../../../catalogue/models.ts";
import { ConvertedStream, chatCompletion, contentText, providerErrorMessage, usageOf } from "../openai/chunks.ts";
import { channelFetch } from "../settings.ts";

const root = (base: string) => base.replace(/\/v1$/, "");

// ---- conversations ------------------------------------------------------------------------------------

/** Remembered conversations: at most this many, each for this long after its last turn. */
const MAX_CONVERSATIONS = 10_000;
const CONVERSATION_TTL_MS = 24 * 3600_000;
const conversations = new Map<string, { id: string; at: number }>();

interface Turn {
  role: string;
  text: string;
}

function digest(channelId: number, user: string, turns: Turn[]): string {
  const h = createHash("sha256");
  h.update(`${channelId}\n${user}\n`);
  for (const t of turns) h.update(`${t.role}\u0000${t.text}\u0001`);
  return h.digest("hex");
}

function remember(key: string, id: string) {
  conversations.delete(key);
  conversations.set(key, { id, at: Date.now() });
  if (conversations.size > MAX_CONVERSATIONS) conversations.delete(conversations.keys().next().value!);
}

function recall(key: string): string | undefined {
  const hit = conversations.get(key);
  if (!hit) return undefined;
  if (Date.now() - hit.at > CONVERSATION_TTL_MS) {
    conversations.delete(key);
    return undefined;
  }
  return hit.id;
}

export function forgetDifyConversations(): void {
  conversations.clear();
}

// ---- requests -----------------------------------------------------------------------------------------

export function difyUser(call: Pick<ProviderCall, "userId">, body: any): string {
  if (typeof body?.user === "string" && body.user) return body.user;
  return call.userId !== undefined ? `user-${call.userId}` : "switchyard";
}

const turnsOf = (messages: any[]): Turn[] =>
  messages.map((m) => ({ role: String(m?.role ?? "user"), text: contentText(m?.content) }));

/** What a call needs to record its conversation once Dify answers. */
interface Pending {
  channelId: number;
  user: string;
  turns: Turn[];
}
const pending = new WeakMap<ProviderCall, Pending>();

async function filesOf(call: ProviderCall, content: unknown, user: string): Promise<unknown[]> {
  if (!Array.isArray(content)) return [];
  const files: unknown[] = [];
  for (const p of content as any[]) {
    if (p?.type !== "image_url") continue;
    const url = String(p.image_url?.url ?? p.image_url ?? "");
    const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
    if (!data) {
      files.push({ type: "image", transfer_method: "remote_url", url });
      continue;
    }
    const form = new FormData();
    form.append("user", user);
    form.append(
      "file",
      new Blob([Buffer.from(data[2]!, "base64")], { type: data[1] }),
      `image.${data[1]!.split("/")[1] ?? "png"}`,
    );
    const res = await channelFetch(call, `${root(call.baseUrl)}/v1/files/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${call.key}` },
      body: form,
    });
    const j: any = await res.json().catch(() => ({}));
    if (res.ok && j?.id) files.push({ type: "image", transfer_method: "local_file", upload_file_id: j.id });
  }
  return files;
}

function transcript(turns: Turn[]): string {
  return turns.map((t) => `${t.role.toUpperCase()}: \n${t.text}`).join("\n");
}

export async function difyBody(call: ProviderCall, body: any): Promise<Record<string, unknown>> {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const user = difyUser(call, body);
  const turns = turnsOf(messages);
  const last = messages.at(-1);
  const history = turns.slice(0, -1);
  const conversation = history.some((t) => t.role === "assistant")
    ? recall(digest(call.channel.id, user, history))
    : undefined;
  pending.set(call, { channelId: call.channel.id, user, turns });
  const single = messages.length === 1;
  const out: Record<string, unknown> = {
    inputs: body?.inputs && typeof body.inputs === "object" ? body.inputs : {},
    query: conversation || single ? contentText(last?.content) : transcript(turns),
    response_mode: call.stream ? "streaming" : "blocking",
    user,
    auto_generate_name: false,
  };
  if (conversation) out.conversation_id = conversation;
  const files = await filesOf(call, last?.content, user);
  if (files.length) out.files = files;
  return out;
}

/** Records the conversation Dify answered in under the history the client will send back with this answer. */
function recordTurn(call: ProviderCall, conversationId: unknown, answer: string) {
  const p = pending.get(call);
  if (!p || typeof conversationId !== "string" || !conversationId) return;
  remember(digest(p.channelId, p.user, [...p.turns, { role: "assistant", text: answer }]), conversationId);
}

// ---- answers ------------------------------------------------------------------------------------------

class DifyStream extends ConvertedStream {
  private answer = "";
  private conversation = "";
  protected onJson(j: any, ev: SseEvent): string {
    if (typeof j?.conversation_id === "string" && j.conversation_id) this.conversation = j.conversation_id;
    switch (j?.event) {
      case "message":
      case "agent_message": {
        const s = typeof j.answer === "string" ? j.answer : "";
        this.answer += s;
        return this.text(s);
      }
      case "message_replace": {
        const s = typeof j.answer === "string" ? j.answer : "";
        this.answer = s;
        return this.text(s);
      }
      case "agent_thought":
        return this.reasoning(typeof j.thought === "string" ? j.thought : "");
      case "message_file": {
        if (j.type !== "image" || typeof j.url !== "string") return "";
        const s = `\n![image](${j.url})\n`;
        this.answer += s;
        return this.text(s);
      }
      case "message_end":
        this.found =
          usageOf(
            j?.metadata?.usage?.prompt_tokens,
            j?.metadata?.usage?.completion_tokens,
            j?.metadata?.usage?.total_tokens,
          ) ?? this.found;
        recordTurn(this.call, this.conversation, this.answer);
        return this.finish("stop");
      case "error":
        return this.error(String(j.message ?? j.code ?? "the Dify app failed"));
      default:
        return "";
    }
  }
}

export const difyAdaptor: ProviderAdaptor = {
  kind: "dify",
  supports: (mode) => mode === "chat",
  async buildRequest(call, body) {
    return {
      url: `${root(call.baseUrl)}/v1/chat-messages`,
      headers: { "content-type": "application/json", authorization: `Bearer ${call.key}` },
      body: JSON.stringify(await difyBody(call, body)),
    };
  },
  parseResponse(call, json) {
    const answer = typeof json?.answer === "string" ? json.answer : "";
    recordTurn(call, json?.conversation_id, answer);
    const u = json?.metadata?.usage;
    const usage = usageOf(u?.prompt_tokens, u?.completion_tokens, u?.total_tokens);
    return {
      body: chatCompletion(
        call.requestModel,
        { content: answer },
        "stop",
        usage,
        json?.message_id ? `chatcmpl-${json.message_id}` : undefined,
      ),
      usage,
    };
  },
  generatedText: (_call, json) => (typeof json?.answer === "string" ? json.answer : ""),
  streamMapper: (call) => new DifyStream(call),
  errorMessage: providerErrorMessage,
  defaultModels: DEFAULT_CHANNEL_MODELS[37],
};
