// Playground (spec 001 §2 Playground, §3 chat message and settings, §4 message states, §5 rules, §9 slider).
// A chat screen as the height of the window: the messages scroll, the input stays at the bottom, replies
// render as Markdown (code blocks highlighted, with a copy button), Stop cuts a reply while it streams.
// The settings are a side panel on a desktop and a drawer on a phone.
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import {
  Button,
  Drawer,
  Empty,
  Input,
  InputNumber,
  Select,
  Slider,
  Spin,
  Tag,
  Tooltip,
  Typography,
} from "@arco-design/web-react";
import {
  IconCopy,
  IconDelete,
  IconRecordStop,
  IconRobot,
  IconSend,
  IconSettings,
  IconUser,
} from "@arco-design/web-react/icon";
import { useTranslation } from "react-i18next";
import { api, USER_ID_HEADER } from "../../api/index.ts";
import { getStoredUser } from "../../lib/storage.ts";
import { useIsMobile } from "../../lib/hooks.ts";
import { toast } from "../../lib/toast.ts";
import { Markdown } from "../../components/Markdown.tsx";
import { copyWithFallback } from "../../components/copy.tsx";
import { streamChat } from "./stream.ts";

export type MessageStatus = "loading" | "incomplete" | "complete" | "error";
export interface ChatMessage {
  id: string;
  role: "user" | "assistant" | "system";
  content: string;
  createAt: number;
  status: MessageStatus;
}

export const PLAYGROUND_DEFAULTS = {
  model: "gpt-4o-mini",
  maxTokens: 0,
  temperature: 0,
  systemPrompt: "You are a helpful assistant.",
};

let seq = 0;
const newId = () => `${Date.now().toString(36)}-${(seq++).toString(36)}`;

/**
 * The request body of spec 001 §7: the system message only when the prompt is non-empty. A sampling
 * setting the user never moved (temperature 0 is below the slider's range) and max tokens 0 ("no limit")
 * are left out: reasoning models refuse temperature 0 and real upstreams refuse max_tokens 0.
 */
export function buildPayload(opts: {
  model: string;
  group: string;
  maxTokens: number;
  temperature: number;
  topP?: number;
  systemPrompt: string;
  history: ChatMessage[];
}) {
  const messages = [
    ...(opts.systemPrompt.trim() ? [{ role: "system", content: opts.systemPrompt }] : []),
    ...opts.history
      .filter((m) => m.role !== "system" && m.status !== "error" && m.content)
      .map((m) => ({ role: m.role, content: m.content })),
  ];
  const maxTokens = Math.trunc(Number(opts.maxTokens) || 0);
  const isSet = (v: number | undefined): v is number => typeof v === "number" && Number.isFinite(v) && v > 0;
  return {
    messages,
    stream: true,
    model: opts.model,
    group: opts.group,
    ...(maxTokens > 0 ? { max_tokens: maxTokens } : {}),
    ...(isSet(opts.temperature) ? { temperature: opts.temperature } : {}),
    ...(isSet(opts.topP) ? { top_p: opts.topP } : {}),
  };
}

const STATUS_COLOR: Record<MessageStatus, string> = {
  loading: "gray",
  incomplete: "arcoblue",
  complete: "green",
  error: "red",
};

function MessageView({ m }: { m: ChatMessage }) {
  const { t } = useTranslation();
  const mine = m.role === "user";
  return (
    <div
      className={`sy-msg ${mine ? "sy-msg-user" : "sy-msg-assistant"}`}
      data-testid={`msg-${m.role}`}
      data-status={m.status}
    >
      <div className="sy-msg-avatar" aria-hidden>
        {mine ? <IconUser /> : <IconRobot />}
      </div>
      <div className="sy-msg-body">
        <div className="sy-msg-bubble">
          {m.status === "loading" ? (
            <Spin size={14} />
          ) : mine ? (
            <div className="sy-msg-text">{m.content}</div>
          ) : (
            <Markdown
              text={m.content}
              testId="msg-markdown"
              className={m.status === "error" ? "sy-msg-error" : undefined}
            />
          )}
        </div>
        {!mine && (
          <div className="sy-msg-meta">
            {m.status !== "complete" && (
              <Tag size="small" color={STATUS_COLOR[m.status]}>
                {t(`ops.pg.status.${m.status}`)}
              </Tag>
            )}
            {m.content && m.status !== "loading" && (
              <Tooltip content={t("common.copy")}>
                <Button
                  size="mini"
                  type="text"
                  icon={<IconCopy />}
                  aria-label={t("common.copy")}
                  onClick={() => copyWithFallback(m.content)}
                  data-testid="msg-copy"
                />
              </Tooltip>
            )}
          </div>
        )}
      </div>
    </div>
  );
}

export default function PlaygroundPage() {
  const { t } = useTranslation();
  const mobile = useIsMobile();
  const [panelOpen, setPanelOpen] = useState(false);
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
  const list = useRef<HTMLDivElement>(null);
  // Follow the reply as it grows, unless the reader scrolled up to read something earlier.
  const follow = useRef(true);
  const busy = messages.some((m) => m.status === "loading" || m.status === "incomplete");

  useEffect(() => {
    void api.get<Record<string, { desc?: string; ratio?: number }>>("/api/user/self/groups").then((r) => {
      if (r.success && r.data && typeof r.data === "object") setGroups(r.data);
    });
    void api.get<string[]>("/api/user/models").then((r) => {
      if (!r.success) return toast.error(t("ops.failedModels"));
      const list = Array.isArray(r.data) ? r.data : [];
      setModels(list);
      if (list.length && !list.includes(PLAYGROUND_DEFAULTS.model)) setModel(list[0]);
    });
    return () => abort.current?.abort();
  }, [t]);

  useLayoutEffect(() => {
    const el = list.current;
    if (el && follow.current) el.scrollTop = el.scrollHeight;
  }, [messages]);

  const patch = (id: string, f: (m: ChatMessage) => ChatMessage) =>
    setMessages((all) => all.map((m) => (m.id === id ? f(m) : m)));

  const send = async () => {
    const text = input.trim();
    if (!text || busy) return;
    const userMsg: ChatMessage = { id: newId(), role: "user", content: text, createAt: Date.now(), status: "complete" };
    const answer: ChatMessage = {
      id: newId(),
      role: "assistant",
      content: "",
      createAt: Date.now(),
      status: "loading",
    };
    const history = [...messages, userMsg];
    follow.current = true;
    setMessages([...history, answer]);
    setInput("");
    const body = buildPayload({ model, group, maxTokens, temperature, systemPrompt, history });
    const ctrl = new AbortController();
    abort.current = ctrl;
    const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "text/event-stream" };
    const user = getStoredUser();
    if (user) headers[USER_ID_HEADER] = String(user.id);
    await streamChat(
      "/pg/chat/completions",
      { method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin", signal: ctrl.signal },
      {
        onDelta: (d) => patch(answer.id, (m) => ({ ...m, content: m.content + d, status: "incomplete" })),
        onDone: () => patch(answer.id, (m) => ({ ...m, status: "complete" })),
        onError: (msg) => patch(answer.id, (m) => ({ ...m, status: "error", content: m.content || msg })),
      },
    );
    abort.current = null;
  };

  const stop = () => abort.current?.abort();
  const clear = () => {
    abort.current?.abort();
    setMessages([]);
  };

  const settings = (
    <div className="sy-pg-settings" data-testid="pg-panel">
      <label className="sy-field">
        <span className="sy-field-label">{t("ops.group")}</span>
        <Select
          value={group || undefined}
          allowClear
          placeholder={t("ops.pg.defaultGroup")}
          onChange={(v) => setGroup(v ?? "")}
          options={Object.entries(groups).map(([g, info]) => ({
            value: g,
            label: `${g}${info?.desc ? ` — ${info.desc}` : ""}`,
          }))}
        />
      </label>
      <label className="sy-field">
        <span className="sy-field-label">{t("ops.pg.model")}</span>
        <Select
          value={model}
          showSearch
          onChange={setModel}
          options={(models.includes(model) ? models : [model, ...models]).map((m) => ({ value: m, label: m }))}
          data-testid="pg-model"
        />
      </label>
      <div className="sy-field">
        <span className="sy-field-label">
          {t("ops.pg.temperature")}: {temperature > 0 ? temperature : "—"}
        </span>
        <Slider value={temperature} min={0.1} max={1} step={0.1} onChange={(v) => setTemperature(Number(v))} />
      </div>
      <label className="sy-field">
        <span className="sy-field-label">{t("ops.pg.maxTokens")}</span>
        <InputNumber
          value={maxTokens}
          min={0}
          precision={0}
          onChange={(v) => setMaxTokens(Math.trunc(Number(v) || 0))}
        />
      </label>
      <label className="sy-field">
        <span className="sy-field-label">{t("ops.pg.systemPrompt")}</span>
        <Input.TextArea value={systemPrompt} onChange={setSystemPrompt} autoSize={{ minRows: 3, maxRows: 10 }} />
      </label>
    </div>
  );

  return (
    <div className="sy-pg" data-testid="playground">
      {!mobile && (
        <aside className="sy-pg-side">
          <Typography.Title heading={6} className="sy-pg-side-title">
            {t("ops.pg.settings")}
          </Typography.Title>
          {settings}
        </aside>
      )}
      <section className="sy-pg-chat">
        <header className="sy-pg-head">
          <Typography.Title heading={6} className="sy-pg-title">
            {t("ops.pg.title")}
          </Typography.Title>
          <Tag color="arcoblue" className="sy-pg-model" title={model}>
            {model}
          </Tag>
          <div className="sy-pg-head-actions">
            {/* On a phone the two buttons are icons, so the model keeps its room. */}
            {mobile && (
              <Button
                size="small"
                icon={<IconSettings />}
                onClick={() => setPanelOpen(true)}
                aria-label={t("ops.pg.showSettings")}
                data-testid="pg-settings"
              />
            )}
            <Button
              size="small"
              icon={<IconDelete />}
              onClick={clear}
              disabled={messages.length === 0}
              data-testid="pg-clear"
              aria-label={t("ops.pg.clear")}
            >
              {mobile ? null : t("ops.pg.clear")}
            </Button>
          </div>
        </header>
        <div
          className="sy-pg-messages"
          ref={list}
          data-testid="pg-messages"
          onScroll={(e) => {
            const el = e.currentTarget;
            follow.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
          }}
        >
          {messages.length === 0 ? (
            <Empty className="sy-pg-empty" description={t("ops.pg.empty")} />
          ) : (
            messages.map((m) => <MessageView key={m.id} m={m} />)
          )}
        </div>
        <div className="sy-pg-composer">
          <Input.TextArea
            value={input}
            onChange={setInput}
            placeholder={t("ops.pg.placeholder")}
            autoSize={{ minRows: 1, maxRows: 8 }}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
                e.preventDefault();
                void send();
              }
            }}
            data-testid="pg-input"
          />
          {busy ? (
            <Button status="warning" icon={<IconRecordStop />} onClick={stop} data-testid="pg-stop">
              {t("ops.pg.stop")}
            </Button>
          ) : (
            <Button type="primary" icon={<IconSend />} onClick={send} disabled={!input.trim()} data-testid="pg-send">
              {t("ops.pg.send")}
            </Button>
          )}
        </div>
      </section>
      {mobile && (
        <Drawer
          placement="bottom"
          height="80%"
          visible={panelOpen}
          title={t("ops.pg.settings")}
          footer={null}
          onCancel={() => setPanelOpen(false)}
        >
          {settings}
        </Drawer>
      )}
    </div>
  );
}
