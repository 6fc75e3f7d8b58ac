// User administration (spec 000 §2.6, §4, §7.1): searchable paged table, add and edit drawers, row
// actions. Deactivated users show a tag and no actions. The page size is remembered (page-size).
import { useCallback, useEffect, useState } from "react";
import { Button, Input, Select, Tag, Typography } from "@arco-design/web-react";
import { useNavigate, useParams, useLocation } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs } from "../../api/index.ts";
import { Page } from "../../components/Page.tsx";
import { ResponsiveTable, type RColumn, type RowAction } from "../../components/ResponsiveTable.tsx";
import { toast } from "../../lib/toast.ts";
import { useApp } from "../../lib/app-state.tsx";
import { getPageSize, setPageSize } from "../../lib/storage.ts";
import { renderNumber, renderQuota, timestampToString } from "../../lib/format.ts";
import { PAGE_SIZE_OPTIONS, ROLE, USER_STATUS } from "../../../server/catalogue/index.ts";
import { AddUserDrawer, EditUserDrawer } from "./UserDrawers.tsx";

export interface UserRow {
  id: number;
  username: string;
  display_name: string;
  role: number;
  status: number;
  group: string;
  quota: number;
  used_quota: number;
  request_count: number;
  email?: string;
  DeletedAt?: string | null;
  aff_count?: number;
  inviter_id?: number;
  created_at?: number;
  created_time?: number;
  last_login_at?: number;
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
  const routeEditId = params.id ? Number(params.id) : pathname === "/user/edit" ? (me?.id ?? null) : null;
  const [editId, setEditId] = useState<number | null>(routeEditId);

  const load = useCallback(
    async (p = page, s = size) => {
      setLoading(true);
      const searching = keyword.trim() || group;
      const path = searching
        ? `/api/user/search${qs({ keyword: keyword.trim(), group, p, page_size: s })}`
        : `/api/user/${qs({ p, page_size: s })}`;
      const r = await api.get<{ items: UserRow[]; total: number; page: number }>(path);
      setLoading(false);
      if (!r.success || !r.data) {
        toast.error(r.message);
        return;
      }
      setRows(r.data.items ?? []);
      setTotal(r.data.total ?? 0);
    },
    [keyword, group, page, size],
  );

  useEffect(() => {
    void load(1, size);
    void api.get<string[]>("/api/group/").then((r) => r.success && setGroups(r.data ?? []));
  }, []);

  const manage = async (row: UserRow, action: Action) => {
    const r = await api.post<{ status: number; role: number }>("/api/user/manage", { id: row.id, action });
    if (!r.success) {
      toast.error(r.message);
      return;
    }
    // Says what happened to whom; one toast replaces the last instead of a stack of "Done".
    toast.success(t(`users.done.${action}`, { name: row.username }));
    setRows((list) =>
      list.map((u) =>
        u.id !== row.id
          ? u
          : action === "delete"
            ? { ...u, DeletedAt: new Date().toISOString() }
            : { ...u, status: r.data?.status ?? u.status, role: r.data?.role ?? u.role },
      ),
    );
  };

  const roleTag = (role: number) =>
    role >= ROLE.root ? (
      <Tag color="orange">{t("role.root")}</Tag>
    ) : role >= ROLE.admin ? (
      <Tag color="arcoblue">{t("role.admin")}</Tag>
    ) : (
      <Tag>{t("role.common")}</Tag>
    );

  // `from`: the table width (px) from which a column stays in the row; narrower, it moves to the row's details.
  const columns: Array<RColumn<UserRow>> = [
    { key: "id", title: "ID", dataIndex: "id", from: 900 },
    {
      key: "username",
      title: t("users.username"),
      dataIndex: "username",
      render: (_: unknown, u) => (
        <div className="sy-stack">
          <span className="sy-clip" title={u.username}>
            {u.username}
          </span>
          {u.display_name && u.display_name !== u.username && (
            <Typography.Text type="secondary" className="sy-sub sy-clip" title={u.display_name}>
              {u.display_name}
            </Typography.Text>
          )}
        </div>
      ),
    },
    { key: "group", title: t("users.group"), dataIndex: "group", from: 700, render: (g: string) => <Tag>{g}</Tag> },
    {
      key: "balance",
      title: t("users.remaining"),
      dataIndex: "quota",
      align: "right",
      from: 560,
      render: (q: number) => (
        <span className="sy-nowrap" data-testid="user-balance">
          {renderQuota(q)}
        </span>
      ),
    },
    {
      key: "used",
      title: t("users.used"),
      dataIndex: "used_quota",
      align: "right",
      from: 820,
      render: (q: number) => <span className="sy-nowrap">{renderQuota(q)}</span>,
    },
    {
      key: "requests",
      title: t("users.requests"),
      dataIndex: "request_count",
      align: "right",
      from: 960,
      render: (n: number) => renderNumber(n),
    },
    { key: "role", title: t("users.role"), dataIndex: "role", from: 640, render: (r: number) => roleTag(r) },
    {
      key: "created",
      title: t("users.createdAt"),
      dataIndex: "created_at",
      from: 1100,
      render: (s: number, u) => <span className="sy-nowrap">{timestampToString(s || (u.created_time ?? 0))}</span>,
    },
    {
      key: "lastLogin",
      title: t("users.lastLoginAt"),
      dataIndex: "last_login_at",
      from: 1100,
      render: (s: number) => (
        <span className="sy-nowrap" data-testid="user-last-login">
          {timestampToString(s)}
        </span>
      ),
    },
    {
      key: "status",
      title: t("users.status"),
      dataIndex: "status",
      render: (st: number, u) =>
        u.DeletedAt ? (
          <Tag color="red">{t("users.deactivated")}</Tag>
        ) : st === USER_STATUS.enabled ? (
          <Tag color="green">{t("users.enabled")}</Tag>
        ) : (
          <Tag color="red">{t("users.banned")}</Tag>
        ),
    },
  ];

  const actions = (u: UserRow): RowAction[] =>
    u.DeletedAt
      ? []
      : [
          { key: "edit", label: t("common.edit"), main: true, onClick: () => setEditId(u.id) },
          u.status === USER_STATUS.enabled
            ? // The super admin cannot be disabled, demoted or deleted (spec 000 §6): those actions are greyed out.
              {
                key: "disable",
                label: t("users.disable"),
                status: "warning",
                main: true,
                disabled: u.role >= ROLE.root,
                onClick: () => void manage(u, "disable"),
              }
            : {
                key: "enable",
                label: t("users.enable"),
                status: "success",
                main: true,
                disabled: u.status === USER_STATUS.unenablable,
                onClick: () => void manage(u, "enable"),
              },
          {
            key: "promote",
            label: t("users.promote"),
            disabled: u.role >= ROLE.admin,
            confirm: t("users.confirmPromote"),
            onClick: () => void manage(u, "promote"),
          },
          {
            key: "demote",
            label: t("users.demote"),
            disabled: u.role < ROLE.admin || u.role >= ROLE.root,
            confirm: t("users.confirmDemote"),
            onClick: () => void manage(u, "demote"),
          },
          {
            key: "delete",
            label: t("common.delete"),
            status: "danger",
            disabled: u.role >= ROLE.root,
            confirm: t("users.confirmDelete"),
            onClick: () => void manage(u, "delete"),
          },
        ];

  const closeEdit = () => {
    setEditId(null);
    if (pathname !== "/user") navigate("/user", { replace: true });
  };

  return (
    <Page
      title={t("users.title")}
      extra={
        <Button type="primary" onClick={() => setAdding(true)}>
          {t("users.add")}
        </Button>
      }
    >
      <div className="sy-toolbar">
        <Input.Search
          allowClear
          className="sy-w-240"
          placeholder={t("users.searchPlaceholder")}
          value={keyword}
          onChange={setKeyword}
          onSearch={() => {
            setPage(1);
            void load(1, size);
          }}
        />
        <Select
          allowClear
          className="sy-w-160"
          placeholder={t("users.group")}
          value={group || undefined}
          onChange={(v) => setGroup(v ?? "")}
          options={groups.map((g) => ({ label: g, value: g }))}
        />
        <Button
          type="primary"
          onClick={() => {
            setPage(1);
            void load(1, size);
          }}
        >
          {t("common.search")}
        </Button>
      </div>
      <ResponsiveTable<UserRow>
        testId="user-table"
        rowKey="id"
        loading={loading}
        columns={columns}
        data={rows}
        actions={actions}
        actionsTitle={t("common.actions")}
        pagination={{
          current: page,
          pageSize: size,
          total,
          showTotal: true,
          sizeCanChange: true,
          sizeOptions: [...PAGE_SIZE_OPTIONS],
          onChange: (p: number, s: number) => {
            if (s !== size) setPageSize(s);
            setPage(p);
            setSize(s);
            void load(p, s);
          },
        }}
      />
      <AddUserDrawer
        visible={adding}
        onClose={() => setAdding(false)}
        onDone={() => {
          setAdding(false);
          void load(page, size);
        }}
      />
      <EditUserDrawer
        id={editId}
        groups={groups}
        onClose={closeEdit}
        onDone={() => {
          closeEdit();
          void load(page, size);
        }}
      />
    </Page>
  );
}
