// The write-behind's local journal: every settled call, log and counter the write-behind queues is appended to a
// file in the instance's data folder before the database has it, so a crash (kill -9, out of memory, a power cut
// after the last sync) loses only the calls in flight, not the last interval's worth of settled ones. The next
// start replays what the database does not have (replayJournal), before any quota lease of the previous life is
// refunded; each slice (one write-behind transaction) carries its id into the database as a write receipt, so a
// slice that was committed just before the crash is skipped and nothing is billed twice.
//
// Lines are appended in one write() at the end of the event loop's turn, at most one every JOURNAL_WRITE_MS (a
// write survives the process being killed: the kernel has it). Every JOURNAL_SYNC_MS, and with every flush, a new segment file starts and the one before is
// synced to the disk off the event loop (which survives the machine going down, less that last fraction of a
// second). A segment file is deleted once every slice with a record in it is committed.
import {
  close,
  closeSync,
  fsync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { Database } from "../../db/index.ts";
import type { DataExportPolicy } from "../modules/dashboard/export.ts";
import { WriteBehind } from "./writebehind.ts";

/** One queued record: a settled call (its hold's lease, payer, cost, counters and log), a log, or counters. */
export type JournalRecord =
  | ["s", string, string | null, number, number, number, JournalUsage, Record<string, unknown> | null]
  | ["l", string, Record<string, unknown>]
  | ["u", string, JournalUsage];
/** UsageEntry's fields in order: userId, username, tokenId, channelId, model, quota, tokens, at. */
export type JournalUsage = [number, string, number, number, string, number, number, number];

/** The longest records wait in memory before they are written (they are lost if the process dies meanwhile). */
export const JOURNAL_WRITE_MS = 1;
/** How often written lines are synced to the disk. */
export const JOURNAL_SYNC_MS = 200;
/** A segment past this size is closed early (a flush that keeps failing must not grow one file without end). */
const SEGMENT_MAX_BYTES = 64 * 1024 * 1024;

interface Segment {
  file: string;
  fd: number | null;
  bytes: number;
  pending: Set<string>;
}

export class Journal {
  private current: Segment | null = null;
  /** Closed segments with slices not yet committed. */
  private closed: Segment[] = [];
  private lines: string[] = [];
  private scheduled = false;
  private dirty = false;
  private writtenAt = -Infinity;
  private seq = 0;
  private timer: ReturnType<typeof setInterval>;
  private readonly life = crypto.randomUUID().slice(0, 8);

  constructor(private dir: string) {
    mkdirSync(dir, { recursive: true });
    // Synced by moving to a new segment and syncing the old one off the event loop: a sync of the file being
    // appended to would hold the appends behind it (hot-path rules 1 and 2).
    this.timer = setInterval(() => {
      if (this.dirty) this.rotate();
    }, JOURNAL_SYNC_MS);
    this.timer.unref?.();
  }

  /** Queues a record of slice `slice`; written at the end of this turn of the event loop. */
  append(slice: string, record: JournalRecord): void {
    const seg = this.current ?? this.open();
    seg.pending.add(slice);
    this.lines.push(JSON.stringify(record) + "\n");
    if (this.scheduled) return;
    this.scheduled = true;
    // At the end of this turn, or at most one write per JOURNAL_WRITE_MS: under load nearly every call settles in
    // a turn of its own, and a write per turn was a system call per call.
    const since = performance.now() - this.writtenAt;
    if (since >= JOURNAL_WRITE_MS) setImmediate(this.write);
    else setTimeout(this.write, Math.ceil(JOURNAL_WRITE_MS - since));
  }

  /** Writes the queued lines now. */
  write = (): void => {
    this.scheduled = false;
    this.writtenAt = performance.now();
    if (this.lines.length === 0 || !this.current) return;
    const text = this.lines.length === 1 ? this.lines[0] : this.lines.join("");
    this.lines = [];
    try {
      const n = writeSync(this.current.fd!, text);
      this.current.bytes += n;
      this.dirty = true;
      if (this.current.bytes > SEGMENT_MAX_BYTES) this.rotate();
    } catch (e) {
      console.error(
        "write-behind journal: append failed (a crash now would lose these calls' records):",
        (e as Error).message,
      );
    }
  };

  /** Starts a new segment (each flush): the one before keeps the records of slices still being written. */
  rotate(): void {
    this.write();
    const seg = this.current;
    if (!seg) return;
    this.current = null;
    this.dirty = false;
    this.closeFd(seg);
    if (seg.pending.size === 0) this.remove(seg);
    else this.closed.push(seg);
  }

  /** The slice is in the database: segments with nothing else pending go. */
  committed(slice: string): void {
    this.current?.pending.delete(slice);
    if (this.closed.length === 0) return;
    for (const seg of this.closed) seg.pending.delete(slice);
    const done = this.closed.filter((s) => s.pending.size === 0);
    if (done.length === 0) return;
    this.closed = this.closed.filter((s) => s.pending.size > 0);
    for (const seg of done) this.remove(seg);
  }

  /** Writes and syncs what is queued and closes the files (shutdown); segments still pending stay for the next start. */
  close(): void {
    clearInterval(this.timer);
    this.write();
    const seg = this.current;
    if (!seg) return;
    this.current = null;
    this.closeFd(seg, true);
    if (seg.pending.size === 0) this.remove(seg);
    else this.closed.push(seg);
  }

  private open(): Segment {
    const file = join(
      this.dir,
      `${Date.now().toString().padStart(15, "0")}-${this.life}-${String(++this.seq).padStart(8, "0")}.jsonl`,
    );
    this.current = { file, fd: openSync(file, "a"), bytes: 0, pending: new Set() };
    return this.current;
  }

  /** Synced and closed off the event loop (a sync can take milliseconds); `now`: at once (shutdown). */
  private closeFd(seg: Segment, now = false): void {
    if (seg.fd == null) return;
    const fd = seg.fd;
    seg.fd = null;
    if (now) {
      try {
        fsyncSync(fd);
        closeSync(fd);
      } catch {}
      return;
    }
    fsync(fd, () => close(fd, () => {}));
  }

  private remove(seg: Segment): void {
    try {
      unlinkSync(seg.file);
    } catch {}
  }
}

/** This instance's journal folder: one per instance name, so two instances sharing a data folder never replay each other's. */
export function journalDir(config: { journalDir: string | null; instanceId: string }): string | null {
  return config.journalDir ? join(config.journalDir, config.instanceId.replace(/[^A-Za-z0-9_.-]/g, "_")) : null;
}

/**
 * Start-up, before anything relays (so before a quota lease of the previous life is refunded): writes what the
 * journal holds and the database does not, then deletes the journal. A database that cannot take it stops the
 * start (the journal stays for the next).
 */
export async function replayJournal(
  db: Database,
  config: { journalDir: string | null; instanceId: string },
  dataExport: DataExportPolicy,
): Promise<void> {
  const dir = journalDir(config);
  if (!dir) return;
  const { files, records } = readJournal(dir);
  if (files.length === 0) return;
  if (records.length > 0) {
    const writer = new WriteBehind(db, 0, dataExport);
    const done = await writer.replay(records);
    console.log(
      `write-behind journal: ${done.records} record(s) of ${done.slices} batch(es) left by the last run replayed (batches the database had already were skipped)`,
    );
  }
  removeJournal(files);
}

/** The segment files a previous life left in `dir`, oldest first, with their records (a torn last line is skipped). */
export function readJournal(dir: string): { files: string[]; records: JournalRecord[] } {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith(".jsonl"))
      .sort();
  } catch {
    return { files: [], records: [] };
  }
  const files = names.map((n) => join(dir, n)).filter((f) => statSync(f).isFile());
  const records: JournalRecord[] = [];
  for (const f of files) {
    for (const line of readFileSync(f, "utf8").split("\n")) {
      if (!line) continue;
      try {
        records.push(JSON.parse(line) as JournalRecord);
      } catch {
        // The line being written when the process died.
      }
    }
  }
  return { files, records };
}

/** Deletes replayed segment files. */
export function removeJournal(files: string[]): void {
  for (const f of files) {
    try {
      unlinkSync(f);
    } catch {}
  }
}
