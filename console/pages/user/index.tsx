// User administration (spec 000 §2.6, §4, §7.1): searchable paged table, add and edit drawers, row
// actions. Deactivated users show a tag and no actions. The page size is remembered (page-size).
import React, { useCallback, useEffect, useState } from "react";
import { Button, Input, Message, Popconfirm, Select, Space, Table, Tag, Tooltip } from "@arco-design/web-react";
import { useNavigate, useParams, useLocation } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs } from "../../api/index.ts";
import { Page } from "../../components/Page.tsx";
import { useApp } from "../../lib/app-state.tsx";
import { getPageSize, setPageSize } from "../../lib/storage.ts";
import { renderNumber, renderQuota } from "../../lib/format.ts";
import { PAGE_SIZE_OPTIONS, ROLE, USER_STATUS } from "../../../server/catalogue/index.ts";
import { AddUserDrawer, EditUserDrawer } from "./UserDrawers.tsx";

export interface UserRow {
  id: number; username: string; display_name: string; role: number; status: number; group: string; quota: number;
  used_quota: number; request_count: number; email?: string; DeletedAt?: string | null; aff_count?: number; inviter_id?: number;
}

type Action = "promote" | "demote" | "disable" | "enable" | "delete";

export default function UsersPage() {
  const { t } = useTranslation();
  const { user: me } = useApp();
  const navigate = useNavigate();
  const params = useParams();
  const { pathname } = useLocation();
  const [rows, setRows] = useState<UserRow[]>([]);
  const [total, setTotal] = useState(0);
  const [page, setPage] = useState(1);
  const [size, setSize] = useState(() => getPageSize());
  const [keyword, setKeyword] = useState("");
  const [group, setGroup] = useState("");
  const [groups, setGroups] = useState<string[]>([]);
  const [loading, setLoading] = useState(false);
  const [adding, setAdding] = useState(false);
  const routeEditId = params.id ? Number(params.id) : pathname === "/user/edit" ? me?.id ?? null : null;
  const [editId, setEditId] = useState<number | null>(routeEditId);

  const load = useCallback(async (p = page, s = size) => {
    setLoading(true);
    const searching = keyword.trim() || group;
    const path = searching ? `/api/user/search${qs({ keyword: keyword.trim(), group, p, page_size: s })}` : `/api/user/${qs({ p, page_size: s })}`;
    const r = await api.get<{ items: UserRow[]; total: number; page: number }>(path);
    setLoading(false);
    if (!r.success || !r.data) {
      Message.error(r.message);
      return;
    }
    setRows(r.data.items ?? []);
    setTotal(r.data.total ?? 0);
  }, [keyword, group, page, size]);

  useEffect(() => {
    void load(1, size);
    void api.get<string[]>("/api/group/").then((r) => r.success && setGroups(r.data ?? []));
  }, []);

  const manage = async (row: UserRow, action: Action) => {
    const r = await api.post<{ status: number; role: number }>("/api/user/manage", { id: row.id, action });
    if (!r.success) {
      Message.error(r.message);
      return;
    }
    Message.success(t("users.actionDone"));
    setRows((list) => list.map((u) => u.id !== row.id ? u : action === "delete"
      ? { ...u, DeletedAt: new Date().toISOString() }
      : { ...u, status: r.data?.status ?? u.status, role: r.data?.role ?? u.role }));
  };

  const roleTag = (role: number) => role >= ROLE.root ? <Tag color="orange">{t("role.root")}</Tag>
    : role >= ROLE.admin ? <Tag color="arcoblue">{t("role.admin")}</Tag> : <Tag>{t("role.common")}</Tag>;

  const columns = [
    { title: "ID", dataIndex: "id", width: 70 },
    {
      title: t("users.username"), dataIndex: "username",
      render: (_: unknown, u: UserRow) => <Tooltip content={u.display_name || u.username}><span>{u.username}</span></Tooltip>,
    },
    { title: t("users.group"), dataIndex: "group", render: (g: string) => <Tag>{g}</Tag> },
    {
      title: t("users.stats"), dataIndex: "quota",
      render: (_: unknown, u: UserRow) => (
        <Space size={4} wrap>
          <Tooltip content={t("users.remaining")}><Tag color="green">{renderQuota(u.quota)}</Tag></Tooltip>
          <Tooltip content={t("users.used")}><Tag color="gray">{renderQuota(u.used_quota)}</Tag></Tooltip>
          <Tooltip content={t("users.requests")}><Tag color="cyan">{renderNumber(u.request_count)}</Tag></Tooltip>
        </Space>
      ),
    },
    { title: t("users.role"), dataIndex: "role", render: (r: number) => roleTag(r) },
    {
      title: t("users.status"), dataIndex: "status",
      render: (s: number, u: UserRow) => u.DeletedAt ? <Tag color="red">{t("users.deactivated")}</Tag>
        : s === USER_STATUS.enabled ? <Tag color="green">{t("users.enabled")}</Tag> : <Tag color="red">{t("users.banned")}</Tag>,
    },
    {
      title: t("common.actions"), dataIndex: "actions",
      render: (_: unknown, u: UserRow) => u.DeletedAt ? null : (
        <Space size={4}>
          <Popconfirm title={t("users.confirmPromote")} onOk={() => void manage(u, "promote")}>
            <Button size="mini" disabled={u.role >= ROLE.admin}>{t("users.promote")}</Button>
          </Popconfirm>
          <Popconfirm title={t("users.confirmDemote")} onOk={() => void manage(u, "demote")}>
            <Button size="mini" disabled={u.role < ROLE.admin || u.role >= ROLE.root}>{t("users.demote")}</Button>
          </Popconfirm>
          {u.status === USER_STATUS.enabled ? (
            <Button size="mini" status="warning" onClick={() => void manage(u, "disable")}>{t("users.disable")}</Button>
          ) : (
            <Button size="mini" status="success" disabled={u.status === USER_STATUS.unenablable} onClick={() => void manage(u, "enable")}>{t("users.enable")}</Button>
          )}
          <Button size="mini" onClick={() => setEditId(u.id)}>{t("common.edit")}</Button>
          <Popconfirm title={t("users.confirmDelete")} onOk={() => void manage(u, "delete")}>
            <Button size="mini" status="danger">{t("common.delete")}</Button>
          </Popconfirm>
        </Space>
      ),
    },
  ];

  const closeEdit = () => {
    setEditId(null);
    if (pathname !== "/user") navigate("/user", { replace: true });
  };

  return (
    <Page title={t("users.title")} extra={<Button type="primary" onClick={() => setAdding(true)}>{t("users.add")}</Button>}>
      <Space wrap style={{ marginBottom: 12 }}>
        <Input.Search allowClear style={{ width: 260 }} placeholder={t("users.searchPlaceholder")} value={keyword} onChange={setKeyword}
          onSearch={() => { setPage(1); void load(1, size); }} />
        <Select allowClear style={{ width: 160 }} placeholder={t("users.group")} value={group || undefined} onChange={(v) => setGroup(v ?? "")}
          options={groups.map((g) => ({ label: g, value: g }))} />
        <Button type="primary" onClick={() => { setPage(1); void load(1, size); }}>{t("common.search")}</Button>
      </Space>
      <Table
        rowKey="id" loading={loading} columns={columns as any} data={rows} scroll={{ x: true }}
        pagination={{
          current: page, pageSize: size, total, showTotal: true, sizeCanChange: true, sizeOptions: [...PAGE_SIZE_OPTIONS],
          onChange: (p, s) => {
            if (s !== size) setPageSize(s);
            setPage(p);
            setSize(s);
            void load(p, s);
          },
        }}
      />
      <AddUserDrawer visible={adding} onClose={() => setAdding(false)} onDone={() => { setAdding(false); void load(page, size); }} />
      <EditUserDrawer id={editId} groups={groups} onClose={closeEdit} onDone={() => { closeEdit(); void load(page, size); }} />
    </Page>
  );
}
