// Edit every channel of a tag at once (spec 001 §5: no changes → 'no changes'; mapping must be JSON;
// priority an integer, weight a non-negative integer).
import { useEffect, useState } from "react";
import { Alert, Input, Message, Modal, Select, Space, Typography } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { isJsonObjectOrEmpty } from "../channel-edit/fields.ts";
import type { ChannelRow } from "./index.tsx";

const list = (s: string | undefined) =>
  String(s ?? "")
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);

export function TagEditor({ row, onClose, onSaved }: { row: ChannelRow; onClose: () => void; onSaved: () => void }) {
  const { t } = useTranslation();
  const original = {
    tag: row.tag ?? "",
    models: list(row.models),
    groups: list(row.group),
    priority: "",
    weight: "",
    mapping: "",
  };
  const [newTag, setNewTag] = useState(original.tag);
  const [models, setModels] = useState<string[]>(original.models);
  const [groups, setGroups] = useState<string[]>(original.groups);
  const [priority, setPriority] = useState("");
  const [weight, setWeight] = useState("");
  const [mapping, setMapping] = useState("");
  const [allGroups, setAllGroups] = useState<string[]>([]);
  const [error, setError] = useState("");

  useEffect(() => {
    void api.get<string[]>("/api/group/").then((r) => r.success && Array.isArray(r.data) && setAllGroups(r.data));
  }, []);

  const submit = async () => {
    setError("");
    const body: Record<string, unknown> = { tag: row.tag };
    if (newTag.trim() !== original.tag) body.new_tag = newTag.trim();
    if (models.join(",") !== original.models.join(",")) body.models = models.join(",");
    if (groups.join(",") !== original.groups.join(",")) body.groups = groups.join(",");
    if (mapping.trim()) {
      if (!isJsonObjectOrEmpty(mapping)) return setError(t("ops.ch.mappingJson"));
      body.model_mapping = mapping.trim();
    }
    if (priority.trim()) {
      if (!/^-?\d+$/.test(priority.trim())) return setError(t("ops.ch.priorityInt"));
      body.priority = Number(priority);
    }
    if (weight.trim()) {
      if (!/^\d+$/.test(weight.trim())) return setError(t("ops.ch.weightInt"));
      body.weight = Number(weight);
    }
    if (Object.keys(body).length === 1) return setError(t("ops.ch.noChanges"));
    const r = await api.put("/api/channel/tag", body);
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.saved"));
    onSaved();
  };

  return (
    <Modal visible title={`${t("ops.ch.editTag")}: ${row.tag}`} onCancel={onClose} onOk={submit} style={{ width: 640 }}>
      <Space direction="vertical" size="medium" style={{ width: "100%" }}>
        {error && <Alert type="error" content={error} data-testid="form-error" />}
        <div>
          <Typography.Text>{t("ops.ch.newTag")}</Typography.Text>
          <Input value={newTag} onChange={setNewTag} />
        </div>
        <div>
          <Typography.Text>{t("ops.ch.models")}</Typography.Text>
          <Select
            mode="multiple"
            allowCreate
            value={models}
            onChange={setModels}
            options={models.map((m) => ({ label: m, value: m }))}
          />
        </div>
        <div>
          <Typography.Text>{t("ops.ch.groups")}</Typography.Text>
          <Select
            mode="multiple"
            allowCreate
            value={groups}
            onChange={setGroups}
            options={[...new Set([...allGroups, ...groups])].map((g) => ({ label: g, value: g }))}
          />
        </div>
        <div>
          <Typography.Text>{t("ops.ch.modelMapping")}</Typography.Text>
          <Input.TextArea
            value={mapping}
            onChange={setMapping}
            placeholder={t("ops.ch.tagMappingHint")}
            autoSize={{ minRows: 2 }}
          />
        </div>
        <Space>
          <div>
            <Typography.Text>{t("ops.ch.priority")}</Typography.Text>
            <Input value={priority} onChange={setPriority} placeholder={t("ops.ch.unchanged")} style={{ width: 140 }} />
          </div>
          <div>
            <Typography.Text>{t("ops.ch.weight")}</Typography.Text>
            <Input value={weight} onChange={setWeight} placeholder={t("ops.ch.unchanged")} style={{ width: 140 }} />
          </div>
        </Space>
      </Space>
    </Modal>
  );
}
