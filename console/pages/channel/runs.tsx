// "Test all channels" and "update all balances" run on the server in the background. While one runs, the
// page polls its progress (GET .../progress?since=N, one result per finished channel), patches each row as
// its result arrives and shows a banner with done / total and the failures; a run started before the page
// was opened (or in another tab) is picked up on load.
import { useCallback, useEffect, useRef, useState } from "react";
import { Button, Progress, Tooltip, Typography } from "@arco-design/web-react";
import { IconClose } from "@arco-design/web-react/icon";
import { useTranslation } from "react-i18next";
import { api } from "../../api/index.ts";
import { toast } from "../../lib/toast.ts";

export type RunKind = "test" | "balance";

export interface TestOutcome {
  id: number;
  name: string;
  success: boolean;
  message: string;
  time: number;
  response_time: number;
  test_time: number;
  status: number;
}
export interface BalanceOutcome {
  id: number;
  name: string;
  success: boolean;
  skipped?: boolean;
  balance?: number;
  balance_updated_time?: number;
  message?: string;
}
export interface RunProgress<R> {
  running: boolean;
  total: number;
  done: number;
  failed: number;
  started_at: number;
  finished_at: number;
  succeeded?: number;
  updated?: number;
  skipped?: number;
  results: R[];
}

const PATHS: Record<RunKind, { start: string; progress: string }> = {
  test: { start: "/api/channel/test", progress: "/api/channel/test/progress" },
  balance: { start: "/api/channel/update_balance", progress: "/api/channel/update_balance/progress" },
};

/** How often a running job's progress is read (a seam: component tests poll faster). */
export const runTiming = { pollMs: 1000 };

/**
 * One background run: `start()` starts (or joins) it; `onResults` gets each batch of new per-channel
 * results, `onFinish` is called once when the run ends. `progress` holds every result read so far.
 */
export function useChannelRun<R>(kind: RunKind, onResults: (results: R[]) => void, onFinish: () => void) {
  const [progress, setProgress] = useState<RunProgress<R> | null>(null);
  const [visible, setVisible] = useState(false);
  const read = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  const alive = useRef(true);
  const handlers = useRef({ onResults, onFinish });
  handlers.current = { onResults, onFinish };

  const absorb = useCallback((p: RunProgress<R>, fresh: boolean) => {
    const results = p.results ?? [];
    read.current = (fresh ? 0 : read.current) + results.length;
    if (results.length) handlers.current.onResults(results);
    setProgress((prev) => ({ ...p, results: fresh || !prev ? results : [...prev.results, ...results] }));
  }, []);

  const poll = useCallback(() => {
    clearTimeout(timer.current);
    timer.current = setTimeout(async () => {
      const r = await api.get<RunProgress<R> | null>(`${PATHS[kind].progress}?since=${read.current}`);
      if (!alive.current) return;
      if (!r.success || !r.data) return poll();
      absorb(r.data, false);
      if (r.data.running) poll();
      else handlers.current.onFinish();
    }, runTiming.pollMs);
  }, [kind, absorb]);

  // A run already going when the page opens is followed like one started here.
  useEffect(() => {
    alive.current = true;
    void api.get<RunProgress<R> | null>(PATHS[kind].progress).then((r) => {
      if (!alive.current || !r.success || !r.data?.running) return;
      absorb(r.data, true);
      setVisible(true);
      poll();
    });
    return () => {
      alive.current = false;
      clearTimeout(timer.current);
    };
  }, [kind]);

  const start = async () => {
    const r = await api.get<RunProgress<R>>(PATHS[kind].start);
    if (!r.success) return toast.error(r.message);
    absorb(
      {
        results: [],
        ...(r.data ?? { running: true, total: 0, done: 0, failed: 0, started_at: 0, finished_at: 0 }),
      } as RunProgress<R>,
      true,
    );
    setVisible(true);
    if (r.data && r.data.running === false) handlers.current.onFinish();
    else poll();
  };

  const running = !!progress?.running;
  return { progress, running, visible, start, dismiss: () => setVisible(false) };
}

/** The banner of one run: a bar with done / total, then what passed and what failed, with the reasons. */
export function RunBanner<
  R extends { id: number; name: string; success: boolean; skipped?: boolean; message?: string },
>({ kind, progress, onClose }: { kind: RunKind; progress: RunProgress<R>; onClose: () => void }) {
  const { t } = useTranslation();
  const { total, done, running } = progress;
  const failures = progress.results.filter((r) => !r.success && !r.skipped);
  const percent = total ? Math.round((done / total) * 100) : running ? 0 : 100;
  const summary = running
    ? t(`ops.run.${kind}.running`, { done, total, failed: failures.length })
    : kind === "test"
      ? t("ops.run.test.finished", { total, ok: progress.succeeded ?? 0, failed: failures.length })
      : t("ops.run.balance.finished", {
          total,
          ok: progress.updated ?? 0,
          failed: failures.length,
          skipped: progress.skipped ?? 0,
        });
  return (
    <div className="sy-run" data-testid={`run-${kind}`} data-running={String(running)} role="status">
      <div className="sy-run-head">
        <Typography.Text bold data-testid={`run-${kind}-summary`}>
          {summary}
        </Typography.Text>
        {!running && (
          <Button size="mini" type="text" icon={<IconClose />} aria-label={t("ops.run.close")} onClick={onClose} />
        )}
      </div>
      <Progress
        percent={percent}
        size="small"
        status={failures.length ? "warning" : running ? "normal" : "success"}
        showText={false}
      />
      {failures.length > 0 && (
        <ul className="sy-run-failures" data-testid={`run-${kind}-failures`}>
          {failures.slice(0, 8).map((f) => (
            <li key={f.id}>
              <b>{f.name || `#${f.id}`}</b>
              <Tooltip content={f.message}>
                <span className="sy-run-reason">{f.message || t("ops.run.noReason")}</span>
              </Tooltip>
            </li>
          ))}
          {failures.length > 8 && <li>{t("ops.run.more", { count: failures.length - 8 })}</li>}
        </ul>
      )}
    </div>
  );
}
