// One titled group of options with its own save button (spec 000 §4–§5, 001 §5): only changed keys are
// sent, one PUT per key; invalid input is shown under the field and blocks the save; switches marked
// immediate save on change.
import type React from "react";
import { useEffect, useMemo, useRef, useState } from "react";
import { Button, Card, Form, Grid, Input, Message, Modal, Select, Space, Switch, Tag } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api, saveOptions } from "../../api/index.ts";
import { fieldError } from "../../components/AuthCard.tsx";
import { useSettings } from "./context.tsx";
import { addDomain, fieldProblem, outgoingValues, splitList, type FieldDef } from "./fields.ts";

export interface SectionProps {
  title: string;
  fields: FieldDef[];
  /** Whole-section check before saving; returns an i18n key. */
  beforeSave?: (values: Record<string, string>, options: Record<string, string>) => string | null;
  /** Last adjustment of what is sent (for rules that involve two fields). */
  transform?: (
    out: Record<string, string>,
    values: Record<string, string>,
    options: Record<string, string>,
  ) => Record<string, string>;
  extra?: (api: { values: Record<string, string>; set: (patch: Record<string, string>) => void }) => React.ReactNode;
  children?: React.ReactNode;
}

/** Toggling off password login asks first; cancelling leaves it on (spec 000 §4). */
const CONFIRM_OFF = new Set(["PasswordLoginEnabled"]);

export function OptionSection({ title, fields, beforeSave, transform, extra, children }: SectionProps) {
  const { t } = useTranslation();
  const { options, commit } = useSettings();
  const signature = fields.map((f) => `${f.key}\u0001${options[f.key] ?? ""}`).join("\u0002");
  const initial = useMemo(() => Object.fromEntries(fields.map((f) => [f.key, options[f.key] ?? ""])), [signature]);
  const [values, setValues] = useState<Record<string, string>>(initial);
  const previous = useRef(initial);
  const [errors, setErrors] = useState<Record<string, string | null>>({});
  const [saving, setSaving] = useState(false);
  const [domainInput, setDomainInput] = useState("");

  // When stored values change (this or another section saved, or a reload), only those keys are
  // refreshed, so unsaved edits elsewhere in the section survive.
  useEffect(() => {
    const before = previous.current;
    previous.current = initial;
    setValues((v) => {
      const next = { ...v };
      for (const k of Object.keys(initial)) if (initial[k] !== before[k]) next[k] = initial[k];
      return next;
    });
  }, [initial]);

  const set = (patch: Record<string, string>) => {
    const next = { ...values, ...patch };
    setValues(next);
    const e = { ...errors };
    for (const k of Object.keys(patch)) {
      const f = fields.find((x) => x.key === k);
      // JSON is checked on blur; other fields as the user types once an error is showing.
      if (f && f.type !== "json" && e[k]) e[k] = fieldProblem(f, next[k], next);
    }
    setErrors(e);
  };

  const blur = (f: FieldDef) => setErrors({ ...errors, [f.key]: fieldProblem(f, values[f.key] ?? "", values) });

  const saveImmediate = async (f: FieldDef, on: boolean) => {
    const apply = async () => {
      const value = on ? "true" : "false";
      setValues((v) => ({ ...v, [f.key]: value }));
      const r = await api.put("/api/option/", { key: f.key, value });
      if (r.success) {
        commit({ [f.key]: value });
        Message.success(t("save.success"));
      } else {
        setValues((v) => ({ ...v, [f.key]: on ? "false" : "true" }));
        Message.error(r.message || t("save.failed"));
      }
    };
    if (!on && CONFIRM_OFF.has(f.key)) {
      Modal.confirm({
        title: t("system.confirmDisablePasswordLogin"),
        content: t("system.confirmDisablePasswordLoginHint"),
        onOk: () => void apply(),
      });
      return;
    }
    await apply();
  };

  const save = async () => {
    const e: Record<string, string | null> = {};
    for (const f of fields) e[f.key] = fieldProblem(f, values[f.key] ?? "", values);
    setErrors(e);
    if (Object.values(e).some(Boolean)) {
      Message.error(t("save.checkInput"));
      return;
    }
    const sectionProblem = beforeSave?.(values, options);
    if (sectionProblem) {
      Message.error(t(sectionProblem));
      return;
    }
    let out = outgoingValues(fields, values);
    if (transform) out = transform(out, values, options);
    // Secrets never come back from the server, so a secret in `out` is always a change to send.
    const isSecret = (k: string) => fields.some((f) => f.key === k && f.type === "secret");
    const original = Object.fromEntries(Object.keys(out).map((k) => [k, isSecret(k) ? "\u0000" : (options[k] ?? "")]));
    setSaving(true);
    const result = await saveOptions(original, out);
    setSaving(false);
    if (result.unchanged) {
      Message.warning(t("save.nothingChanged"));
      return;
    }
    commit(Object.fromEntries(result.saved.map((k) => [k, isSecret(k) ? "" : out[k]])));
    if (result.failed.length === 0) Message.success(t("save.success"));
    else if (result.saved.length === 0) Message.error(result.failed[0].message || t("save.failed"));
    else
      Message.error(`${t("save.partialFailure")}: ${result.failed.map((f) => `${f.key} (${f.message})`).join(", ")}`);
  };

  const hasButton = fields.some((f) => !f.immediate && !f.readOnly);

  const control = (f: FieldDef) => {
    const v = values[f.key] ?? "";
    const disabled = f.readOnly || (f.disabledWhen ? f.disabledWhen(values) : false);
    switch (f.type) {
      case "switch":
        return (
          <Switch
            checked={v === "true"}
            disabled={disabled}
            data-testid={`opt-${f.key}`}
            onChange={(on) => (f.immediate ? void saveImmediate(f, on) : set({ [f.key]: on ? "true" : "false" }))}
          />
        );
      case "number":
        return (
          <Input
            name={f.key}
            value={v}
            disabled={disabled}
            inputMode="decimal"
            placeholder={f.placeholder}
            onChange={(x) => set({ [f.key]: x })}
            onBlur={() => blur(f)}
          />
        );
      case "textarea":
      case "json":
        return (
          <Input.TextArea
            name={f.key}
            value={v}
            disabled={disabled}
            autoSize={{ minRows: f.type === "json" ? 4 : 3, maxRows: 14 }}
            placeholder={f.placeholder}
            onChange={(x) => set({ [f.key]: x })}
            onBlur={() => blur(f)}
            style={f.type === "json" ? { fontFamily: "monospace" } : undefined}
          />
        );
      case "select":
        return <Select value={v} disabled={disabled} options={f.options} onChange={(x) => set({ [f.key]: x })} />;
      case "secret":
        return (
          <Input.Password
            name={f.key}
            value={v}
            disabled={disabled}
            autoComplete="new-password"
            placeholder={f.placeholder ?? t("settings.secretPlaceholder")}
            onChange={(x) => set({ [f.key]: x })}
          />
        );
      case "domains":
        return (
          <Space direction="vertical" style={{ width: "100%" }}>
            <Space wrap>
              {splitList(v).map((d) => (
                <Tag
                  key={d}
                  closable
                  onClose={() =>
                    set({
                      [f.key]: splitList(v)
                        .filter((x) => x !== d)
                        .join(","),
                    })
                  }
                >
                  {d}
                </Tag>
              ))}
            </Space>
            <Space>
              <Input
                name={`${f.key}-new`}
                value={domainInput}
                onChange={setDomainInput}
                placeholder="example.com"
                style={{ width: 220 }}
                onPressEnter={() => addTo(f)}
              />
              <Button onClick={() => addTo(f)}>{t("common.add")}</Button>
            </Space>
          </Space>
        );
      default:
        return (
          <Input
            name={f.key}
            value={v}
            disabled={disabled}
            placeholder={f.placeholder}
            onChange={(x) => set({ [f.key]: x })}
            onBlur={() => blur(f)}
          />
        );
    }
  };

  const addTo = (f: FieldDef) => {
    if (!domainInput.trim()) return;
    const r = addDomain(values[f.key] ?? "", domainInput);
    if ("error" in r) {
      setErrors({ ...errors, [f.key]: r.error });
      return;
    }
    setErrors({ ...errors, [f.key]: null });
    set({ [f.key]: r.list });
    setDomainInput("");
  };

  return (
    <Card title={title} bordered={false} className="sy-option-section" data-testid={`section-${title}`}>
      <Form layout="vertical">
        <Grid.Row gutter={16}>
          {fields.map((f) => (
            <Grid.Col key={f.key} xs={24} md={f.type === "switch" ? 8 : f.span === 1 ? 8 : f.span === 2 ? 12 : 24}>
              <Form.Item
                label={f.label}
                extra={f.help}
                {...fieldError(errors[f.key] ? t(errors[f.key]!, { min: f.min, max: f.max }) : null)}
              >
                {control(f)}
              </Form.Item>
            </Grid.Col>
          ))}
        </Grid.Row>
        {extra?.({ values, set })}
        {children}
        {hasButton && (
          <div>
            <Button type="primary" loading={saving} onClick={() => void save()}>
              {t("settings.saveSection", { title })}
            </Button>
          </div>
        )}
      </Form>
    </Card>
  );
}
