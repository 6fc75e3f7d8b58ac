// The channel create/edit form (spec 001 §4 Channel form, §5 Channel submit, §8 channel messages, §9 defaults).
// Used by the /channel/add and /channel/edit/{id} pages and by the drawer on the channel list.
import type React from "react";
import { useEffect, useRef, useState } from "react";
import {
  Alert,
  AutoComplete,
  Button,
  Input,
  Message,
  Modal,
  Select,
  Space,
  Spin,
  Switch,
  Tag,
  Typography,
} from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import {
  CHANNEL_TYPES,
  DEFAULT_GROUP,
  FORWARDED_HEADERS,
  KIND_WIRE_FORMATS,
  RESPONSES_API_SETTINGS,
  RESPONSES_CAPABLE_KINDS,
  channelType,
  forwardHeaderNames,
  servesNatively,
  type ChannelKind,
} from "../../../server/catalogue/index.ts";
import {
  SETTING_SWITCHES,
  fieldsFor,
  isJsonObjectOrEmpty,
  isProxyUrl,
  readSetting,
  splitNames,
  writeSetting,
} from "./fields.ts";
import { cachedTypeModels, defaultModelsFor, loadTypeModels, sameList, type TypeModels } from "./typeModels.ts";
import { KeyViewer } from "./KeyViewer.tsx";
import { MultiKeyPanel } from "./MultiKeyPanel.tsx";

export interface ChannelFormValues {
  type: number;
  name: string;
  key: string;
  base_url: string;
  other: string;
  openai_organization: string;
  models: string[];
  groups: string[];
  model_mapping: string;
  status_code_mapping: string;
  param_override: string;
  setting: string;
  tag: string;
  priority: string;
  weight: string;
  auto_ban: boolean;
  test_model: string;
  batch: boolean;
  multi_to_single: boolean;
  /** the context window of the channel's models in tokens ("" or 0: not known); a longer prompt goes to the model's fallback */
  max_input_tokens: string;
  /** a multi-key channel (edit) or one to be made of the key lines (create): its rotation, and whether new keys are added */
  multi_key: boolean;
  multi_key_mode: "polling" | "random";
  key_append: boolean;
}

/** New channel defaults (spec 001 §9): type 1, auto_ban on, group default, priority 0, weight 0. */
export function emptyChannel(): ChannelFormValues {
  return {
    type: 1,
    name: "",
    key: "",
    base_url: "",
    other: "",
    openai_organization: "",
    models: [],
    groups: [DEFAULT_GROUP],
    model_mapping: "",
    status_code_mapping: "",
    param_override: "",
    setting: "",
    tag: "",
    priority: "0",
    weight: "0",
    auto_ban: true,
    test_model: "",
    batch: false,
    multi_to_single: false,
    multi_key: false,
    multi_key_mode: "polling",
    key_append: false,
    max_input_tokens: "",
  };
}

const list = (v: unknown): string[] =>
  Array.isArray(v)
    ? v.map(String)
    : String(v ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);

export function fromChannel(c: Record<string, any>): ChannelFormValues {
  return {
    ...emptyChannel(),
    type: Number(c.type ?? 1),
    name: c.name ?? "",
    key: c.key ?? "",
    base_url: c.base_url ?? "",
    other: c.other ?? "",
    openai_organization: c.openai_organization ?? "",
    models: list(c.models),
    groups: list(c.group),
    model_mapping: c.model_mapping ?? "",
    status_code_mapping: c.status_code_mapping ?? "",
    param_override: c.param_override ?? "",
    setting: c.setting ?? "",
    tag: c.tag ?? "",
    priority: String(c.priority ?? 0),
    weight: String(c.weight ?? 0),
    auto_ban: Number(c.auto_ban ?? 1) === 1,
    test_model: c.test_model ?? "",
    multi_key: Boolean(c.channel_info?.is_multi_key),
    multi_key_mode: c.channel_info?.multi_key_mode === "random" ? "random" : "polling",
    max_input_tokens: Number(c.max_input_tokens) > 0 ? String(c.max_input_tokens) : "",
  };
}

type FieldName = keyof ChannelFormValues;

/** The first problem of the form as spec 001 §5 says: its message and the fields to mark, or null. */
export function channelProblem(
  v: ChannelFormValues,
  creating: boolean,
  t: (k: string) => string,
): { message: string; fields: FieldName[] } | null {
  const problem = (key: string, ...fields: FieldName[]) => ({ message: t(key), fields });
  if (creating && (!v.name.trim() || !v.key.trim())) {
    return problem(
      "ops.ch.nameKeyRequired",
      ...([!v.name.trim() && "name", !v.key.trim() && "key"].filter(Boolean) as FieldName[]),
    );
  }
  if (v.models.length === 0) return problem("ops.ch.modelRequired", "models");
  if (!isJsonObjectOrEmpty(v.model_mapping)) return problem("ops.ch.mappingJson", "model_mapping");
  if (!isJsonObjectOrEmpty(v.status_code_mapping)) return problem("ops.ch.statusMappingJson", "status_code_mapping");
  if (!isJsonObjectOrEmpty(v.param_override)) return problem("ops.ch.paramOverrideJson", "param_override");
  if (!isJsonObjectOrEmpty(v.setting)) return problem("ops.ch.settingJson", "setting");
  if (!isProxyUrl(String(readSetting(v.setting).proxy ?? ""))) return problem("ops.ch.proxyInvalid", "setting");
  if (v.priority.trim() && !/^-?\d+$/.test(v.priority.trim())) return problem("ops.ch.priorityInt", "priority");
  if (v.weight.trim() && !/^\d+$/.test(v.weight.trim())) return problem("ops.ch.weightInt", "weight");
  if (v.max_input_tokens.trim() && !/^\d+$/.test(v.max_input_tokens.trim()))
    return problem("ops.ch.maxInputTokensInt", "max_input_tokens");
  if (fieldsFor(v.type).baseUrl?.required && !v.base_url.trim()) return problem("ops.ch.baseUrlRequired", "base_url");
  if (fieldsFor(v.type).other?.required && !v.other.trim()) return problem("ops.ch.otherRequired", "other");
  return null;
}

/** Checks the form as spec 001 §5 says; returns the message to show or null. */
export function validateChannel(v: ChannelFormValues, creating: boolean, t: (k: string) => string): string | null {
  return channelProblem(v, creating, t)?.message ?? null;
}

/** The wire body: lists as comma strings, trailing slash stripped, type 18's version defaulted. */
export function toBody(v: ChannelFormValues, id?: number): Record<string, unknown> {
  let other = v.other.trim();
  if (v.type === 18 && !other) other = "v2.1";
  const body: Record<string, unknown> = {
    type: v.type,
    name: v.name.trim(),
    base_url: v.base_url.trim().replace(/\/+$/, ""),
    other,
    openai_organization: v.openai_organization.trim(),
    models: v.models.join(","),
    group: v.groups.join(","),
    model_mapping: v.model_mapping.trim(),
    status_code_mapping: v.status_code_mapping.trim(),
    param_override: v.param_override.trim(),
    setting: v.setting.trim(),
    tag: v.tag.trim(),
    auto_ban: v.auto_ban ? 1 : 0,
    test_model: v.test_model.trim(),
  };
  if (v.priority.trim()) body.priority = Number(v.priority);
  if (v.weight.trim()) body.weight = Number(v.weight);
  body.max_input_tokens = v.max_input_tokens.trim() ? Number(v.max_input_tokens) : 0;
  if (id) {
    body.id = id;
    // An empty key on edit keeps the stored key; a multi-key channel may add keys instead of replacing them.
    if (v.key.trim()) body.key = v.key.trim();
    if (v.multi_key) {
      body.multi_key_mode = v.multi_key_mode;
      if (v.key.trim() && v.key_append) body.key_mode = "append";
    }
  } else {
    body.key = v.key.trim();
    body.mode = v.batch ? (v.multi_to_single ? "multi_to_single" : "batch") : "single";
    if (v.batch && v.multi_to_single) body.multi_key_mode = v.multi_key_mode;
  }
  return body;
}

export function ChannelForm({ id, onSaved, onCancel }: { id?: number; onSaved: () => void; onCancel: () => void }) {
  const { t } = useTranslation();
  const creating = !id;
  const [v, setV] = useState<ChannelFormValues>(emptyChannel);
  const [loading, setLoading] = useState(!!id);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState("");
  // The fields the last failed save pointed at: marked red, with the message under the first one.
  const [badFields, setBadFields] = useState<FieldName[]>([]);
  const formRef = useRef<HTMLDivElement>(null);
  const [allGroups, setAllGroups] = useState<string[]>([DEFAULT_GROUP]);
  const [enabledModels, setEnabledModels] = useState<string[]>([]);
  const [custom, setCustom] = useState("");
  const [fetching, setFetching] = useState(false);
  // Default models per type: the cached GET /api/models answer (or the catalogue) until the server answers.
  const [typeModels, setTypeModels] = useState<TypeModels>(cachedTypeModels);

  useEffect(() => {
    const initial = cachedTypeModels();
    void loadTypeModels().then((fresh) => {
      setTypeModels(fresh);
      // A new channel whose list still holds the defaults filled in before the answer gets the fresh ones.
      if (!id)
        setV((cur) =>
          sameList(cur.models, defaultModelsFor(initial, cur.type))
            ? { ...cur, models: defaultModelsFor(fresh, cur.type) }
            : cur,
        );
    });
  }, [id]);

  useEffect(() => {
    void api.get<string[]>("/api/group/").then((r) => {
      if (r.success && Array.isArray(r.data)) setAllGroups([...new Set([DEFAULT_GROUP, ...r.data])]);
    });
    void api.get<string[]>("/api/channel/models_enabled").then((r) => {
      if (r.success && Array.isArray(r.data)) setEnabledModels(r.data);
      else if (!r.success) Message.error(t("ops.ch.failedEnabledModels"));
    });
    if (!id) {
      setV((cur) => ({ ...cur, models: defaultModelsFor(cachedTypeModels(), cur.type) }));
      return;
    }
    void api.get(`/api/channel/${id}`).then((r) => {
      setLoading(false);
      if (!r.success || !r.data) return setError(r.success ? t("ops.ch.notFound") : r.message || t("ops.ch.notFound"));
      setV(fromChannel(r.data));
    });
  }, [id, t]);

  const set = <K extends keyof ChannelFormValues>(k: K, value: ChannelFormValues[K]) => {
    setV((cur) => ({ ...cur, [k]: value }));
    // Editing a marked field takes its mark away; the message goes with the last mark.
    setBadFields((f) => {
      const next = f.filter((x) => x !== k);
      if (f.length && !next.length) setError("");
      return next;
    });
  };

  // A type change fills the model list with that type's defaults when the list is empty (spec 001 §4).
  // A new channel starts with type 1's defaults filled in, so a list still holding exactly the old
  // type's defaults counts as untouched too: an AWS Claude channel should not keep OpenAI's models.
  const changeType = (type: number) =>
    setV((cur) => {
      const defaults = fieldsFor(type).other?.defaultValue;
      const untouched = cur.models.length === 0 || sameList(cur.models, defaultModelsFor(typeModels, cur.type));
      return {
        ...cur,
        type,
        models: untouched ? defaultModelsFor(typeModels, type) : cur.models,
        other: cur.other || defaults || "",
      };
    });

  const fillDefaults = () => set("models", [...new Set([...v.models, ...defaultModelsFor(typeModels, v.type)])]);

  const addCustom = () => {
    const names = splitNames(custom);
    if (!names.length) return;
    const existing = names.filter((n) => v.models.includes(n));
    const fresh = names.filter((n) => !v.models.includes(n));
    if (existing.length) Message.warning(`${t("ops.ch.modelsExist")}: ${existing.join(", ")}`);
    if (fresh.length) set("models", [...v.models, ...fresh]);
    setCustom("");
  };

  const fetchUpstream = async () => {
    if (creating && !v.key.trim()) return Message.error(t("ops.ch.fillKey"));
    setFetching(true);
    const r = creating
      ? await api.post<string[]>("/api/channel/fetch_models", {
          base_url: v.base_url.trim().replace(/\/+$/, ""),
          type: v.type,
          key: v.key.trim().split("\n")[0],
        })
      : await api.get<string[]>(`/api/channel/fetch_models/${id}`);
    setFetching(false);
    if (!r.success || !Array.isArray(r.data)) return Message.error(r.message || t("ops.ch.failedModelList"));
    set("models", [...new Set([...v.models, ...r.data.map(String)])]);
    Message.success(t("ops.ch.fetchedModels", { count: r.data.length }));
  };

  const save = async () => {
    const problem = channelProblem(v, creating, t);
    if (problem) {
      setError(problem.message);
      setBadFields(problem.fields);
      // Bring the first marked field into view (the form is long) and put the cursor in it.
      requestAnimationFrame(() => {
        const el = formRef.current?.querySelector<HTMLElement>(".sy-field-error");
        el?.scrollIntoView?.({ block: "center", behavior: "smooth" });
        el?.querySelector<HTMLElement>("input, textarea")?.focus({ preventScroll: true });
      });
      return;
    }
    setError("");
    setBadFields([]);
    const base = v.base_url.trim().replace(/\/+$/, "");
    if (base.endsWith("/v1") && v.type !== 8) {
      const ok = await new Promise<boolean>((resolve) =>
        Modal.confirm({
          title: t("ops.ch.v1Title"),
          content: t("ops.ch.v1Warning"),
          onOk: () => resolve(true),
          onCancel: () => resolve(false),
        }),
      );
      if (!ok) return;
    }
    setSaving(true);
    const body = toBody(v, id);
    const r = creating ? await api.post("/api/channel/", body) : await api.put("/api/channel/", body);
    setSaving(false);
    if (!r.success) return Message.error(r.message || t("ops.ch.submitFailed"));
    Message.success(creating ? t("ops.ch.created") : t("ops.saved"));
    onSaved();
  };

  const mark = (f: FieldName) => (badFields.includes(f) ? { error: f === badFields[0] ? error : true } : {});

  if (loading) return <Spin />;
  const fields = fieldsFor(v.type);
  const typeInfo = channelType(v.type);
  const modelOptions = [...new Set([...v.models, ...enabledModels])];

  return (
    <div ref={formRef}>
      <Space direction="vertical" size="medium" style={{ width: "100%" }} data-testid="channel-form">
        {error && <Alert type="error" content={error} data-testid="form-error" />}
        <Field label={t("ops.ch.type")}>
          <Select
            value={v.type}
            onChange={changeType}
            showSearch
            filterOption={(input, option) =>
              String((option as any)?.props?.children ?? "")
                .toLowerCase()
                .includes(input.toLowerCase())
            }
            data-testid="channel-type"
          >
            {CHANNEL_TYPES.map((ct) => (
              <Select.Option key={ct.id} value={ct.id}>{`${ct.id} · ${ct.name}`}</Select.Option>
            ))}
          </Select>
        </Field>
        <Field label={t("ops.name")} {...mark("name")}>
          <Input
            value={v.name}
            onChange={(x) => set("name", x)}
            placeholder={t("ops.ch.namePlaceholder")}
            data-testid="channel-name"
          />
        </Field>
        {typeInfo?.kind === "retired" && (
          <Alert
            type="warning"
            data-testid="channel-retired"
            content={t("ops.ch.retired", {
              name: typeInfo.name,
              instead: channelType(typeInfo.replacedBy ?? 0)?.name ?? "",
            })}
          />
        )}
        <Field label={t(fields.baseUrl?.label ?? "ops.ch.baseUrl")} {...mark("base_url")}>
          <AutoComplete
            value={v.base_url}
            onChange={(x) => set("base_url", String(x ?? ""))}
            data={[...(fields.baseUrl?.options ?? [])]}
            data-testid="channel-base-url"
            placeholder={fields.baseUrl ? t(fields.baseUrl.placeholder) : typeInfo?.baseUrl || t("ops.ch.baseUrlHint")}
          />
          {fields.baseUrl?.help && (
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              {t(fields.baseUrl.help)}
            </Typography.Text>
          )}
        </Field>
        {fields.organization && (
          <Field label={t("ops.ch.organization")}>
            <Input
              value={v.openai_organization}
              onChange={(x) => set("openai_organization", x)}
              placeholder="org-..."
            />
          </Field>
        )}
        {fields.other && (
          <Field label={t(fields.other.label)} {...mark("other")}>
            <AutoComplete
              value={v.other}
              onChange={(x) => set("other", String(x ?? ""))}
              data={[...(fields.other.options ?? [])]}
              placeholder={t(fields.other.placeholder)}
              data-testid="channel-other"
            />
          </Field>
        )}
        <Field
          label={
            <>
              {t("ops.ch.key")}
              {id ? <KeyViewer channelId={id} /> : null}
            </>
          }
          {...mark("key")}
        >
          {creating && !fields.jsonKey && (
            <Space style={{ marginBottom: 6 }}>
              <Switch size="small" checked={v.batch} onChange={(x) => set("batch", x)} />
              <span>{t("ops.ch.batch")}</span>
              {v.batch && (
                <>
                  <Switch size="small" checked={v.multi_to_single} onChange={(x) => set("multi_to_single", x)} />
                  <span>{t("ops.ch.multiToSingle")}</span>
                </>
              )}
              {v.batch && v.multi_to_single && (
                <RotationSelect value={v.multi_key_mode} onChange={(x) => set("multi_key_mode", x)} />
              )}
            </Space>
          )}
          {!creating && v.multi_key && (
            <Space style={{ marginBottom: 6 }}>
              <Switch
                size="small"
                checked={v.key_append}
                onChange={(x) => set("key_append", x)}
                data-testid="mk-append"
              />
              <span>{t("ops.ch.mkAppend")}</span>
              <RotationSelect value={v.multi_key_mode} onChange={(x) => set("multi_key_mode", x)} />
            </Space>
          )}
          <Input.TextArea
            value={v.key}
            onChange={(x) => set("key", x)}
            autoSize={{ minRows: v.batch || fields.jsonKey ? 4 : 1, maxRows: 10 }}
            data-testid="channel-key"
            placeholder={
              fields.keyHint
                ? t(fields.keyHint)
                : v.batch
                  ? t("ops.ch.keyBatchHint")
                  : creating
                    ? t("ops.ch.keyHint")
                    : t("ops.ch.keyKeep")
            }
          />
        </Field>
        {!creating && v.multi_key && id && (
          <Field label={t("ops.ch.mkTitle")}>
            <MultiKeyPanel channelId={id} />
          </Field>
        )}
        <Field label={t("ops.ch.groups")}>
          <Select
            mode="multiple"
            allowCreate
            value={v.groups}
            onChange={(x) => set("groups", x)}
            options={allGroups.map((g) => ({ label: g, value: g }))}
          />
        </Field>
        <Field
          label={
            <>
              {t("ops.ch.models")} <Tag size="small">{v.models.length}</Tag>
            </>
          }
          {...mark("models")}
        >
          <Select
            mode="multiple"
            allowClear
            allowCreate
            value={v.models}
            onChange={(x) => set("models", x)}
            maxTagCount={30}
            options={modelOptions.map((m) => ({ label: m, value: m }))}
            data-testid="channel-models"
          />
          <Space wrap style={{ marginTop: 6 }}>
            <Button size="small" onClick={fillDefaults}>
              {t("ops.ch.fillDefaults")}
            </Button>
            <Button size="small" onClick={() => set("models", [...new Set([...v.models, ...enabledModels])])}>
              {t("ops.ch.fillEnabled")}
            </Button>
            <Button size="small" loading={fetching} onClick={fetchUpstream}>
              {t("ops.ch.fetchModels")}
            </Button>
            <Button size="small" status="warning" onClick={() => set("models", [])}>
              {t("ops.ch.clearModels")}
            </Button>
          </Space>
          <Space style={{ marginTop: 6, width: "100%" }}>
            <Input
              value={custom}
              onChange={setCustom}
              placeholder={t("ops.ch.customModels")}
              onPressEnter={addCustom}
              style={{ width: 320 }}
            />
            <Button size="small" onClick={addCustom}>
              {t("ops.ch.addCustom")}
            </Button>
          </Space>
        </Field>
        <Field label={t("ops.ch.modelMapping")} {...mark("model_mapping")}>
          <Input.TextArea
            value={v.model_mapping}
            onChange={(x) => set("model_mapping", x)}
            autoSize={{ minRows: 2 }}
            placeholder={'{"gpt-3.5-turbo": "gpt-4o-mini"}'}
          />
        </Field>
        <Field label={t("ops.ch.statusCodeMapping")} {...mark("status_code_mapping")}>
          <Input.TextArea
            value={v.status_code_mapping}
            onChange={(x) => set("status_code_mapping", x)}
            autoSize={{ minRows: 1 }}
            placeholder={'{"400": "500"}'}
          />
        </Field>
        <Field label={t("ops.ch.paramOverride")} {...mark("param_override")}>
          <Input.TextArea
            value={v.param_override}
            onChange={(x) => set("param_override", x)}
            autoSize={{ minRows: 1 }}
            placeholder={'{"temperature": 0}'}
          />
        </Field>
        <ChannelSettings type={v.type} setting={v.setting} onChange={(x) => set("setting", x)} />
        <Field label={t("ops.ch.setting")} {...mark("setting")}>
          <Input.TextArea
            value={v.setting}
            onChange={(x) => set("setting", x)}
            autoSize={{ minRows: 1 }}
            placeholder={'{"proxy": "socks5://user:pass@host:1080"}'}
            data-testid="channel-setting"
          />
        </Field>
        <Space wrap>
          <Field label={t("ops.ch.tag")}>
            <Input value={v.tag} onChange={(x) => set("tag", x)} style={{ width: 160 }} />
          </Field>
          <Field label={t("ops.ch.priority")} {...mark("priority")}>
            <Input value={v.priority} onChange={(x) => set("priority", x)} style={{ width: 100 }} />
          </Field>
          <Field label={t("ops.ch.weight")} {...mark("weight")}>
            <Input value={v.weight} onChange={(x) => set("weight", x)} style={{ width: 100 }} />
          </Field>
          <Field label={t("ops.ch.testModel")}>
            <Input value={v.test_model} onChange={(x) => set("test_model", x)} style={{ width: 180 }} />
          </Field>
          <Field label={t("ops.ch.maxInputTokens")} {...mark("max_input_tokens")}>
            <Input
              value={v.max_input_tokens}
              onChange={(x) => set("max_input_tokens", x)}
              placeholder={t("ops.ch.maxInputTokensHint")}
              style={{ width: 200 }}
              name="max_input_tokens"
              title={t("ops.ch.maxInputTokensHelp")}
            />
          </Field>
        </Space>
        <Space>
          <Switch checked={v.auto_ban} onChange={(x) => set("auto_ban", x)} />
          <span>{t("ops.ch.autoBan")}</span>
        </Space>
        <Space>
          <Button onClick={onCancel}>{t("ops.cancel")}</Button>
          <Button type="primary" loading={saving} onClick={save} data-testid="channel-submit">
            {t("ops.submit")}
          </Button>
        </Space>
      </Space>
    </div>
  );
}

/**
 * The channel settings new-api keeps in `setting` (spec 001 §3: proxy, system prompt, ...), edited with their
 * own controls; the JSON below them shows and keeps every key, including ones this form does not know.
 */
/** Polling (in turn) or random choice among a multi-key channel's enabled keys. */
function RotationSelect({
  value,
  onChange,
}: {
  value: "polling" | "random";
  onChange: (v: "polling" | "random") => void;
}) {
  const { t } = useTranslation();
  return (
    <Select
      size="small"
      style={{ width: 170 }}
      value={value}
      onChange={onChange}
      data-testid="mk-mode"
      options={[
        { label: t("ops.ch.mkPolling"), value: "polling" },
        { label: t("ops.ch.mkRandom"), value: "random" },
      ]}
    />
  );
}

const SWITCH_TEXT: Record<(typeof SETTING_SWITCHES)[number], [string, string]> = {
  system_prompt_override: ["ops.ch.systemPromptOverride", "ops.ch.systemPromptOverrideHelp"],
  force_format: ["ops.ch.forceFormat", "ops.ch.forceFormatHelp"],
  thinking_to_content: ["ops.ch.thinkingToContent", "ops.ch.thinkingToContentHelp"],
  pass_through_body_enabled: ["ops.ch.passThroughBody", "ops.ch.passThroughBodyHelp"],
};

/** Whether the upstream serves the Responses API itself: the type's default, or the channel's own answer. */
function ResponsesApiSelect({
  type,
  value,
  onChange,
}: {
  type: number;
  value: unknown;
  onChange: (v: string) => void;
}) {
  const { t } = useTranslation();
  const byDefault = servesNatively(type, "/v1/responses") ? t("ops.ch.responsesNative") : t("ops.ch.responsesChat");
  const current = (RESPONSES_API_SETTINGS as readonly unknown[]).includes(value) ? String(value) : "default";
  return (
    <Field label={t("ops.ch.responsesApi")}>
      {/* Wide enough for the longest label (Russian "type default: …"); narrower screens get their width. */}
      <Select
        style={{ width: "100%", maxWidth: 440 }}
        value={current}
        onChange={(x) => onChange(x === "default" ? "" : x)}
        data-testid="setting-responses_api"
        options={[
          { label: t("ops.ch.responsesDefault", { mode: byDefault }), value: "default" },
          { label: t("ops.ch.responsesNativeOption"), value: "native" },
          { label: t("ops.ch.responsesChatOption"), value: "chat" },
        ]}
      />
      <Typography.Text type="secondary" style={{ display: "block", fontSize: 12 }}>
        {t("ops.ch.responsesApiHelp")}
      </Typography.Text>
    </Field>
  );
}

/** The client headers a channel forwards besides its format's defaults (setting.forward_headers, a list of names). */
function ForwardHeadersField({
  kind,
  value,
  onChange,
}: {
  kind: ChannelKind;
  value: unknown;
  onChange: (v: string[] | "") => void;
}) {
  const { t } = useTranslation();
  const stored = forwardHeaderNames(value);
  // The text as typed (a trailing comma included); replaced only when the setting changes elsewhere (the JSON box).
  const [text, setText] = useState(stored.join(", "));
  const storedKey = stored.join(",");
  useEffect(() => {
    if (forwardHeaderNames(text).join(",") !== storedKey) setText(stored.join(", "));
  }, [storedKey]);
  const defaults = [...new Set((KIND_WIRE_FORMATS[kind] ?? []).flatMap((f) => FORWARDED_HEADERS[f]))];
  return (
    <Field label={t("ops.ch.forwardHeaders")}>
      <Input
        value={text}
        placeholder="x-trace-id, x-team-*"
        data-testid="setting-forward_headers"
        onChange={(x) => {
          setText(x);
          const names = forwardHeaderNames(x);
          onChange(names.length ? names : "");
        }}
      />
      <Typography.Text
        type="secondary"
        style={{ display: "block", fontSize: 12 }}
        data-testid="setting-forward_headers-help"
      >
        {t("ops.ch.forwardHeadersHelp", { defaults: defaults.join(", ") })}
      </Typography.Text>
    </Field>
  );
}

function ChannelSettings({
  type,
  setting,
  onChange,
}: {
  type: number;
  setting: string;
  onChange: (text: string) => void;
}) {
  const { t } = useTranslation();
  const s = readSetting(setting);
  const put = (key: string, value: unknown) => onChange(writeSetting(setting, key, value));
  const kind = channelType(type)?.kind;
  return (
    <div data-testid="channel-settings">
      <Field label={t("ops.ch.proxy")}>
        <Input
          value={String(s.proxy ?? "")}
          onChange={(x) => put("proxy", x.trim())}
          placeholder="socks5://user:pass@127.0.0.1:1080"
          data-testid="setting-proxy"
        />
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {t("ops.ch.proxyHelp")}
        </Typography.Text>
      </Field>
      <Field label={t("ops.ch.systemPrompt")}>
        <Input.TextArea
          value={String(s.system_prompt ?? "")}
          onChange={(x) => put("system_prompt", x)}
          autoSize={{ minRows: 1, maxRows: 6 }}
          placeholder={t("ops.ch.systemPromptHint")}
          data-testid="setting-system-prompt"
        />
      </Field>
      {kind && RESPONSES_CAPABLE_KINDS.includes(kind) && (
        <ResponsesApiSelect type={type} value={s.responses_api} onChange={(x) => put("responses_api", x)} />
      )}
      {kind && KIND_WIRE_FORMATS[kind] && (
        <ForwardHeadersField kind={kind} value={s.forward_headers} onChange={(x) => put("forward_headers", x)} />
      )}
      <Space wrap size="large" style={{ marginTop: 6 }}>
        {SETTING_SWITCHES.map((key) => (
          <label
            key={key}
            title={t(SWITCH_TEXT[key][1])}
            style={{ display: "inline-flex", gap: 8, alignItems: "center" }}
          >
            <Switch
              size="small"
              checked={s[key] === true}
              onChange={(x) => put(key, x)}
              data-testid={`setting-${key}`}
            />
            <span>{t(SWITCH_TEXT[key][0])}</span>
          </label>
        ))}
      </Space>
    </div>
  );
}

/** A labelled field; `error` marks it (true) or marks it and says why under it (a message). */
function Field({
  label,
  children,
  error,
}: {
  label: React.ReactNode;
  children: React.ReactNode;
  error?: string | boolean;
}) {
  return (
    <div className={error ? "sy-field-error" : undefined} data-invalid={error ? "true" : undefined}>
      <Typography.Text style={{ display: "block", marginBottom: 4 }}>{label}</Typography.Text>
      {children}
      {typeof error === "string" && error && (
        <div className="sy-field-message" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}
