// Lists whose endpoint returns pages without a total (drawing and task logs, pages from 0): the table pages
// over what is loaded, and reaching the last loaded page fetches the next server page while pages come back full.
import { useRef, useState } from "react";
import { Message } from "@arco-design/web-react";
import type { Envelope } from "../../api/index.ts";

export function useGrowingList<T>(fetchPage: (page: number, size: number) => Promise<Envelope<T[]>>, size: number) {
  const [rows, setRows] = useState<T[]>([]);
  const [page, setPage] = useState(1);
  const [loading, setLoading] = useState(false);
  const [more, setMore] = useState(false);
  const serverPage = useRef(0);

  const load = async (next: number, replace: boolean) => {
    setLoading(true);
    const r = await fetchPage(next, size);
    setLoading(false);
    if (!r.success) {
      Message.error(r.message);
      return;
    }
    const items = Array.isArray(r.data) ? r.data : [];
    serverPage.current = next;
    setMore(items.length === size);
    setRows((prev) => (replace ? items : [...prev, ...items]));
  };

  const reload = async () => {
    setPage(1);
    await load(0, true);
  };

  const onPageChange = (p: number) => {
    setPage(p);
    if (more && p >= Math.ceil(rows.length / size)) void load(serverPage.current + 1, false);
  };

  // One extra page in the total keeps the "next" button live while the server may have more.
  const total = rows.length + (more ? size : 0);
  return { rows, page, loading, total, reload, onPageChange };
}
