// Playground (spec 001 §2 Playground, §3 chat message and settings, §4 message states, §5 rules, §9 slider).
import React, { useEffect, useRef, useState } from "react";
import { Button, Card, Empty, Input, InputNumber, Message, Select, Slider, Space, Spin, Tag, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api, USER_ID_HEADER } from "../../api/index.ts";
import { getStoredUser } from "../../lib/storage.ts";
import { useIsMobile } from "../../lib/hooks.ts";
import { streamChat } from "./stream.ts";

export type MessageStatus = "loading" | "incomplete" | "complete" | "error";
export interface ChatMessage { id: string; role: "user" | "assistant" | "system"; content: string; createAt: number; status: MessageStatus }

export const PLAYGROUND_DEFAULTS = { model: "gpt-4o-mini", maxTokens: 0, temperature: 0, systemPrompt: "You are a helpful assistant." };

let seq = 0;
const newId = () => `${Date.now().toString(36)}-${(seq++).toString(36)}`;

/** The request body of spec 001 §7: the system message only when the prompt is non-empty. */
export function buildPayload(opts: { model: string; group: string; maxTokens: number; temperature: number; systemPrompt: string; history: ChatMessage[] }) {
  const messages = [
    ...(opts.systemPrompt.trim() ? [{ role: "system", content: opts.systemPrompt }] : []),
    ...opts.history.filter((m) => m.role !== "system" && m.status !== "error" && m.content).map((m) => ({ role: m.role, content: m.content })),
  ];
  return {
    messages, stream: true, model: opts.model, group: opts.group,
    max_tokens: Math.trunc(Number(opts.maxTokens) || 0), temperature: opts.temperature,
  };
}

const STATUS_COLOR: Record<MessageStatus, string> = { loading: "gray", incomplete: "arcoblue", complete: "green", error: "red" };

export default function PlaygroundPage() {
  const { t } = useTranslation();
  const mobile = useIsMobile();
  const [panelOpen, setPanelOpen] = useState(!mobile);
  const [groups, setGroups] = useState<Record<string, { desc?: string; ratio?: number }>>({});
  const [models, setModels] = useState<string[]>([]);
  const [group, setGroup] = useState("");
  const [model, setModel] = useState(PLAYGROUND_DEFAULTS.model);
  const [temperature, setTemperature] = useState(PLAYGROUND_DEFAULTS.temperature);
  const [maxTokens, setMaxTokens] = useState(PLAYGROUND_DEFAULTS.maxTokens);
  const [systemPrompt, setSystemPrompt] = useState(PLAYGROUND_DEFAULTS.systemPrompt);
  const [messages, setMessages] = useState<ChatMessage[]>([]);
  const [input, setInput] = useState("");
  const abort = useRef<AbortController | null>(null);
  const busy = messages.some((m) => m.status === "loading" || m.status === "incomplete");

  useEffect(() => {
    void api.get<Record<string, { desc?: string; ratio?: number }>>("/api/user/self/groups").then((r) => {
      if (r.success && r.data && typeof r.data === "object") setGroups(r.data);
    });
    void api.get<string[]>("/api/user/models").then((r) => {
      if (!r.success) return Message.error(t("ops.failedModels"));
      const list = Array.isArray(r.data) ? r.data : [];
      setModels(list);
      if (list.length && !list.includes(PLAYGROUND_DEFAULTS.model)) setModel(list[0]);
    });
    return () => abort.current?.abort();
  }, [t]);

  const patch = (id: string, f: (m: ChatMessage) => ChatMessage) => setMessages((list) => list.map((m) => (m.id === id ? f(m) : m)));

  const send = async () => {
    const text = input.trim();
    if (!text || busy) return;
    const userMsg: ChatMessage = { id: newId(), role: "user", content: text, createAt: Date.now(), status: "complete" };
    const answer: ChatMessage = { id: newId(), role: "assistant", content: "", createAt: Date.now(), status: "loading" };
    const history = [...messages, userMsg];
    setMessages([...history, answer]);
    setInput("");
    const body = buildPayload({ model, group, maxTokens, temperature, systemPrompt, history });
    const ctrl = new AbortController();
    abort.current = ctrl;
    const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "text/event-stream" };
    const user = getStoredUser();
    if (user) headers[USER_ID_HEADER] = String(user.id);
    await streamChat("/pg/chat/completions", { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin", signal: ctrl.signal }, {
      onDelta: (d) => patch(answer.id, (m) => ({ ...m, content: m.content + d, status: "incomplete" })),
      onDone: () => patch(answer.id, (m) => ({ ...m, status: "complete" })),
      onError: (msg) => patch(answer.id, (m) => ({ ...m, status: "error", content: m.content || msg })),
    });
    abort.current = null;
  };

  const stop = () => abort.current?.abort();
  const clear = () => {
    abort.current?.abort();
    setMessages([]);
  };

  const panel = (
    <Card title={t("ops.pg.settings")} style={{ width: mobile ? "100%" : 300, flexShrink: 0 }} data-testid="pg-panel">
      <Space direction="vertical" size="medium" style={{ width: "100%" }}>
        <div>
          <div>{t("ops.group")}</div>
          <Select value={group || undefined} allowClear placeholder={t("ops.pg.defaultGroup")} onChange={(v) => setGroup(v ?? "")}
            options={Object.entries(groups).map(([g, info]) => ({ value: g, label: `${g}${info?.desc ? ` — ${info.desc}` : ""}` }))} />
        </div>
        <div>
          <div>{t("ops.pg.model")}</div>
          <Select value={model} showSearch onChange={setModel} options={(models.includes(model) ? models : [model, ...models]).map((m) => ({ value: m, label: m }))} data-testid="pg-model" />
        </div>
        <div>
          <div>{t("ops.pg.temperature")}: {temperature}</div>
          <Slider value={temperature} min={0.1} max={1} step={0.1} onChange={(v) => setTemperature(Number(v))} />
        </div>
        <div>
          <div>{t("ops.pg.maxTokens")}</div>
          <InputNumber value={maxTokens} min={0} precision={0} onChange={(v) => setMaxTokens(Math.trunc(Number(v) || 0))} />
        </div>
        <div>
          <div>{t("ops.pg.systemPrompt")}</div>
          <Input.TextArea value={systemPrompt} onChange={setSystemPrompt} autoSize={{ minRows: 3, maxRows: 8 }} />
        </div>
      </Space>
    </Card>
  );

  return (
    <div style={{ display: "flex", flexDirection: mobile ? "column" : "row", gap: 16, padding: 16, minHeight: "calc(100vh - 140px)" }}>
      {mobile && <Button onClick={() => setPanelOpen((o) => !o)}>{panelOpen ? t("ops.pg.hideSettings") : t("ops.pg.showSettings")}</Button>}
      {(!mobile || panelOpen) && panel}
      <Card title={t("ops.pg.title")} style={{ flex: 1, display: "flex", flexDirection: "column" }}
        extra={<Button size="small" onClick={clear} data-testid="pg-clear">{t("ops.pg.clear")}</Button>}>
        <div style={{ minHeight: 320, maxHeight: "60vh", overflowY: "auto", marginBottom: 12 }} data-testid="pg-messages">
          {messages.length === 0 && <Empty description={t("ops.pg.empty")} />}
          {messages.map((m) => (
            <div key={m.id} data-testid={`msg-${m.role}`} data-status={m.status}
              style={{ display: "flex", justifyContent: m.role === "user" ? "flex-end" : "flex-start", margin: "8px 0" }}>
              <div style={{
                maxWidth: "80%", padding: "8px 12px", borderRadius: 8, whiteSpace: "pre-wrap", wordBreak: "break-word",
                background: m.role === "user" ? "rgb(var(--arcoblue-1))" : "var(--color-fill-2)", color: "var(--color-text-1)",
              }}>
                {m.status === "loading" ? <Spin size={14} /> : <Typography.Text type={m.status === "error" ? "error" : undefined}>{m.content}</Typography.Text>}
                {m.role === "assistant" && <div><Tag size="small" color={STATUS_COLOR[m.status]}>{t(`ops.pg.status.${m.status}`)}</Tag></div>}
              </div>
            </div>
          ))}
        </div>
        <div style={{ display: "flex", gap: 8, alignItems: "flex-end" }}>
          <Input.TextArea value={input} onChange={setInput} placeholder={t("ops.pg.placeholder")} autoSize={{ minRows: 2, maxRows: 6 }} style={{ flex: 1 }}
            onKeyDown={(e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); void send(); } }} data-testid="pg-input" />
          {busy
            ? <Button status="warning" onClick={stop}>{t("ops.pg.stop")}</Button>
            : <Button type="primary" onClick={send} disabled={!input.trim()} data-testid="pg-send">{t("ops.pg.send")}</Button>}
        </div>
      </Card>
    </div>
  );
}
