// A stand-in for a Dify chat app's API: POST /v1/chat-messages with the app key, blocking or streaming.
// Dify keeps conversations per user: a conversation_id it does not know for that user is a 404. Streams
// carry what a chatflow app sends — workflow_started, node_started, message pieces, node_finished,
// workflow_finished, ping, message_end (with usage) — plus agent_thought when the query asks to "think",
// and an error event when it asks to "fail". Uploads (/v1/files/upload) answer a file id.
import { serve, type MockUpstream } from "./recorder.ts";

export const DIFY_TEXT = "Hello from Dify.";
export const DIFY_USAGE = {
  prompt_tokens: 11,
  completion_tokens: 7,
  total_tokens: 18,
  prompt_price: "0.0001",
  currency: "USD",
  latency: 0.5,
};

export interface DifyMock extends MockUpstream {
  /** conversation id → the user it belongs to */
  conversations: Map<string, string>;
}

const ev = (obj: Record<string, unknown>) => `data: ${JSON.stringify(obj)}\n\n`;

export function startDifyUpstream(key = "app-dify"): DifyMock {
  const mock = serve((_req, rec) => {
    if (rec.headers.authorization !== `Bearer ${key}`)
      return Response.json({ code: "unauthorized", message: "Access token is invalid", status: 401 }, { status: 401 });
    if (rec.path === "/v1/files/upload")
      return Response.json(
        { id: "file-1", name: "image.png", size: 4, extension: "png", mime_type: "image/png" },
        { status: 201 },
      );
    if (rec.path !== "/v1/chat-messages")
      return Response.json({ code: "not_found", message: "Not Found", status: 404 }, { status: 404 });
    const body = rec.body ?? {};
    if (typeof body.query !== "string" || !body.query || typeof body.user !== "string" || !body.user) {
      return Response.json(
        { code: "invalid_param", message: "query and user are required", status: 400 },
        { status: 400 },
      );
    }
    let conversation = body.conversation_id as string | undefined;
    if (conversation) {
      if (mock.conversations.get(conversation) !== body.user)
        return Response.json({ code: "not_found", message: "Conversation Not Exists.", status: 404 }, { status: 404 });
    } else {
      conversation = `conv-${mock.conversations.size + 1}`;
      mock.conversations.set(conversation, body.user);
    }
    const ids = {
      conversation_id: conversation,
      message_id: `msg-${mock.requests.length}`,
      task_id: "task-1",
      created_at: 1700000000,
    };
    if (body.response_mode === "blocking") {
      return Response.json({
        event: "message",
        ...ids,
        id: ids.message_id,
        mode: "advanced-chat",
        answer: DIFY_TEXT,
        metadata: { usage: DIFY_USAGE, retriever_resources: [] },
      });
    }
    const frames = [
      ev({
        event: "workflow_started",
        ...ids,
        workflow_run_id: "wr-1",
        data: { id: "wr-1", workflow_id: "wf-1", created_at: 1700000000 },
      }),
      ev({
        event: "node_started",
        ...ids,
        workflow_run_id: "wr-1",
        data: { id: "n-1", node_id: "llm", node_type: "llm", title: "LLM", index: 1 },
      }),
      "event: ping\n\n",
    ];
    if (body.query.includes("think"))
      frames.push(
        ev({
          event: "agent_thought",
          ...ids,
          id: "th-1",
          position: 1,
          thought: "Checking my notes.",
          tool: "",
          observation: "",
        }),
      );
    if (body.query.includes("fail")) {
      frames.push(
        ev({
          event: "error",
          ...ids,
          status: 400,
          code: "provider_quota_exceeded",
          message: "Your quota for the model provider has been exhausted.",
        }),
      );
      return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
    }
    for (const t of ["Hello", " from", " Dify."])
      frames.push(ev({ event: "message", ...ids, id: ids.message_id, answer: t }));
    frames.push(
      ev({
        event: "node_finished",
        ...ids,
        workflow_run_id: "wr-1",
        data: { id: "n-1", node_id: "llm", node_type: "llm", status: "succeeded" },
      }),
    );
    frames.push(
      ev({
        event: "workflow_finished",
        ...ids,
        workflow_run_id: "wr-1",
        data: { id: "wr-1", status: "succeeded", total_tokens: 18 },
      }),
    );
    frames.push(
      ev({
        event: "message_end",
        ...ids,
        id: ids.message_id,
        metadata: { usage: DIFY_USAGE, retriever_resources: [] },
      }),
    );
    return new Response(frames.join(""), { headers: { "content-type": "text/event-stream" } });
  }) as DifyMock;
  mock.conversations = new Map();
  return mock;
}
