// POST /v1/responses/compact on channels without it: the model is asked, through chat, to summarise the
// conversation, and the answer is OpenAI's compacted response — the user messages of the input, then one
// compaction item whose encrypted_content holds the summary sealed by the gateway. Sent back as input later,
// that item becomes a user message with the summary (request.ts), on any channel that converts.
import type { OpenAIChatRequest, OpenAIChatResponse } from "../claude/wire.ts";
import { convertResponsesRequest, sealContent, type ResponsesRequest } from "./request.ts";
import { responseId, responseUsage } from "./answer.ts";

/** What the model is asked after the conversation. */
export const COMPACT_PROMPT =
  "Summarise the conversation so far so that it can be continued from the summary alone: the goal, "
  + "what was decided and done (files, commands, results), the current state, and what remains to do. Reply with the summary only.";

/** The chat request that writes the summary: the conversation, then the ask; no tool may be called. */
export function compactToChat(req: ResponsesRequest): OpenAIChatRequest {
  const { chat } = convertResponsesRequest({ ...req, stream: false, text: null, max_output_tokens: null });
  chat.messages.push({ role: "user", content: COMPACT_PROMPT });
  if (chat.tools) chat.tool_choice = "none";
  delete chat.parallel_tool_calls;
  return chat;
}

/** The input's user messages, as the compacted output keeps them. */
function userMessages(input: ResponsesRequest["input"]): any[] {
  if (typeof input === "string")
    return [{ type: "message", role: "user", content: [{ type: "input_text", text: input }] }];
  if (!Array.isArray(input)) return [];
  return input
    .filter((i: any) => (i?.type ?? (i?.role ? "message" : "")) === "message" && i.role === "user")
    .map((i: any) => ({
      type: "message",
      role: "user",
      content: typeof i.content === "string" ? [{ type: "input_text", text: i.content }] : i.content,
    }));
}

const hex = () => crypto.randomUUID().replace(/-/g, "");

/** The chat answer as a compacted response. */
export function chatToCompacted(chat: OpenAIChatResponse, req: ResponsesRequest): Record<string, any> {
  const summary = String(chat.choices?.[0]?.message?.content ?? "");
  return {
    id: responseId(),
    object: "response.compaction",
    created_at: chat.created ?? Math.floor(Date.now() / 1000),
    output: [
      ...userMessages(req.input),
      { id: `cmp_${hex()}`, type: "compaction", encrypted_content: sealContent(summary) },
    ],
    usage: responseUsage(chat.usage),
  };
}
