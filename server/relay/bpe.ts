// A byte-pair encoder for OpenAI's tiktoken vocabularies (o200k_base, cl100k_base) that stays linear on
// any input. tiktoken's merge loop (and every npm port of it: js-tiktoken, gpt-tokenizer, the WASM build)
// scans the whole piece for the lowest-ranked pair before each merge, which is quadratic in the length of a
// piece: one character repeated 16,000 times is one piece and took js-tiktoken 19 s. Here a piece longer
// than SMALL_PIECE bytes is merged with a binary heap of (rank, position) over a linked list of parts:
// the same merges in the same order (lowest rank first, leftmost on ties), in O(n log n).
//
// Rank tables come from js-tiktoken's data files ({pat_str, special_tokens, bpe_ranks}); only the data is
// used. Tokens are keyed by their bytes as a "binary string" (one char per byte, what atob returns), so an
// ASCII piece is its own key and a merge looks up a substring of the piece, with no array joins.

export interface RankFile {
  pat_str: string;
  special_tokens: Record<string, number>;
  /** lines of "<first token, base64> <first rank> <token, base64> ..." */
  bpe_ranks: string;
}

/** Pieces up to this many bytes are merged by a plain scan (fastest for the short pieces of real text). */
const SMALL_PIECE = 32;
const NONE = -1;
/** Above every token id of the vocabularies (o200k_base has 200,019 with its special tokens). */
const PAIR_STRIDE = 1 << 18;

export class Bpe {
  readonly pattern: RegExp;
  private ranks = new Map<string, number>();
  private tokens: string[] = [];
  private maxTokenBytes = 0;
  /** Ranks of merged pairs by (left id, right id), filled as long pieces meet them. */
  private pairs = new Map<number, number>();
  /** Work done so far: 2 per piece, 1 per pair rank looked up. Budgets are in steps (a step costs about the same
   * on any kind of text), and tests read it to check that the work grows linearly with the text. */
  steps = 0;
  /** Merged pieces seen recently (words not in the vocabulary repeat), cleared when it fills. */
  private cache = new Map<string, { ids: number[]; steps: number }>();

  constructor(file: RankFile) {
    this.pattern = new RegExp(file.pat_str, "gu");
    for (const line of file.bpe_ranks.split("\n")) {
      if (!line) continue;
      const parts = line.split(" ");
      const first = Number(parts[1]);
      for (let i = 2; i < parts.length; i++) {
        const bytes = atob(parts[i]!);
        this.ranks.set(bytes, first + i - 2);
        this.tokens[first + i - 2] = bytes;
        if (bytes.length > this.maxTokenBytes) this.maxTokenBytes = bytes.length;
      }
    }
  }

  /** The number of tokens of `text`, special tokens counted as ordinary text (tiktoken's encode_ordinary). */
  count(text: string): number {
    return this.run(text, null, Infinity).tokens;
  }

  /**
   * Counts `text` until about `budget` steps (pieces and pair lookups, see `steps`) are spent: the tokens
   * and the number of leading characters they cover. A step costs about the same on any text, while
   * characters do not: English needs ~0.5 steps per character, one repeated letter ~3, so a
   * budget bounds the time where a character cap would not. A piece too long for what is left is counted
   * up to the budget and the count stops there.
   */
  countWithin(text: string, budget: number): { tokens: number; chars: number } {
    return this.run(text, null, budget);
  }

  /** The token ids of `text` (encode_ordinary). */
  encode(text: string): number[] {
    const out: number[] = [];
    this.run(text, out, Infinity);
    return out;
  }

  /** The text of token ids, or null when one is not in the vocabulary. */
  decode(ids: readonly number[]): string | null {
    let bytes = "";
    for (const id of ids) {
      const t = Number.isInteger(id) ? this.tokens[id] : undefined;
      if (t === undefined) return null;
      bytes += t;
    }
    return new TextDecoder().decode(latin1Bytes(bytes));
  }

  private run(text: string, out: number[] | null, budget: number): { tokens: number; chars: number } {
    if (!text) return { tokens: 0, chars: 0 };
    const limit = this.steps + budget;
    // No budget covers more than ~5 characters a step: the pattern never has to scan further than this.
    const scanned = text.length > budget * 8 ? text.slice(0, budget * 8) : text;
    const ascii = isAscii(scanned);
    const re = this.pattern;
    re.lastIndex = 0;
    let n = 0;
    for (let m = re.exec(scanned); m !== null; m = re.exec(scanned)) {
      if (this.steps >= limit) return { tokens: n, chars: m.index };
      // A piece (pattern match, conversion, lookup) costs about twice a pair lookup.
      this.steps += 2;
      // A merge costs at most 3 steps a byte: a piece longer than the rest of the budget pays for is
      // counted as far as it does, and the count ends there. (A piece has at least as many bytes as
      // characters, so only the characters that can be afforded are converted to bytes.)
      const room = Math.floor((limit - this.steps) / 3);
      const raw = m[0];
      const head = raw.length > room && raw.length > SMALL_PIECE ? raw.slice(0, room) : raw;
      const piece = ascii || isAscii(head) ? head : utf8Binary(head);
      if (head !== raw || (piece.length > room && piece.length > SMALL_PIECE)) {
        const part = piece.slice(0, Math.max(2, room));
        n += part.length > 1 ? this.mergeLong(part).length : part.length;
        return { tokens: n, chars: m.index + Math.floor((head.length * part.length) / Math.max(1, piece.length)) };
      }
      const whole = this.ranks.get(piece);
      if (whole !== undefined) {
        n++;
        out?.push(whole);
        continue;
      }
      const ids = this.merge(piece);
      n += ids.length;
      if (out) for (const id of ids) out.push(id);
    }
    return { tokens: n, chars: scanned.length };
  }

  private merge(piece: string): number[] {
    // A cached piece is charged the steps its merge cost, so the part of a text a budget covers never
    // depends on what was counted before (the time saved is a bonus, not a bigger budget).
    const hit = this.cache.get(piece);
    if (hit) {
      this.steps += hit.steps;
      return hit.ids;
    }
    const before = this.steps;
    const ids = piece.length <= SMALL_PIECE ? this.mergeSmall(piece) : this.mergeLong(piece);
    if (piece.length <= 256) {
      if (this.cache.size >= 4096) this.cache.clear();
      this.cache.set(piece, { ids, steps: this.steps - before });
    }
    return ids;
  }

  private rankOf(piece: string, start: number, end: number): number {
    if (end - start > this.maxTokenBytes) return NONE;
    return this.ranks.get(piece.substring(start, end)) ?? NONE;
  }

  /** tiktoken's own loop: merge the lowest-ranked (leftmost) adjacent pair until none is in the vocabulary. */
  private mergeSmall(piece: string): number[] {
    const starts: number[] = [];
    const ranks: number[] = [];
    for (let i = 0; i <= piece.length; i++) starts.push(i);
    this.steps += piece.length;
    for (let i = 0; i + 2 <= piece.length; i++) ranks.push(this.rankOf(piece, i, i + 2));
    while (ranks.length > 0) {
      let at = -1;
      let min = Infinity;
      for (let i = 0; i < ranks.length; i++) {
        const r = ranks[i]!;
        if (r !== NONE && r < min) {
          min = r;
          at = i;
        }
      }
      if (at < 0) break;
      this.steps += 2;
      // Parts at and at+1 become one: drop the boundary between them and re-rank both neighbouring pairs.
      starts.splice(at + 1, 1);
      ranks.splice(at, 1);
      if (at < ranks.length) ranks[at] = this.rankOf(piece, starts[at]!, starts[at + 2]!);
      if (at > 0) ranks[at - 1] = this.rankOf(piece, starts[at - 1]!, starts[at + 1]!);
    }
    return this.idsOf(piece, starts);
  }

  /**
   * The same merges with a min-heap of (rank, start) entries over a linked list of parts. An entry goes
   * stale when its part was absorbed or re-ranked; it is skipped when popped (its rank no longer matches).
   * A part's rank and start fix the pair's bytes, so a matching entry is always the current pair.
   */
  private mergeLong(piece: string): number[] {
    const n = piece.length;
    const next = new Int32Array(n + 1);
    const prev = new Int32Array(n + 1);
    const rank = new Int32Array(n);
    // The token id of each part: pairs are looked up by (left id, right id) in a memo of integers,
    // which costs far less than hashing a new substring for every candidate pair.
    const id = new Int32Array(n);
    const heap = new PairHeap(n);
    for (let i = 0; i <= n; i++) {
      next[i] = i + 1;
      prev[i] = i - 1;
    }
    for (let i = 0; i < n; i++) id[i] = this.ranks.get(piece[i]!)!;
    const pair = (a: number, b: number, end: number): number => {
      this.steps++;
      const k = id[a]! * PAIR_STRIDE + id[b]!;
      let r = this.pairs.get(k);
      if (r === undefined) {
        r = this.rankOf(piece, a, end);
        if (this.pairs.size >= 1 << 20) this.pairs.clear();
        this.pairs.set(k, r);
      }
      return r;
    };
    for (let i = 0; i + 1 < n; i++) {
      rank[i] = pair(i, i + 1, i + 2);
      if (rank[i] !== NONE) heap.push(rank[i]!, i);
    }
    rank[n - 1] = NONE;
    while (heap.size > 0) {
      heap.pop();
      const at = heap.pos;
      const r = heap.rank;
      if (rank[at] !== r) continue;
      // Merge part `at` with the part after it; the merged part's id is the pair's rank.
      const gone = next[at]!;
      const after = next[gone]!;
      next[at] = after;
      prev[after] = at;
      rank[gone] = NONE;
      id[at] = r;
      rank[at] = after < n ? pair(at, after, next[after]!) : NONE;
      if (rank[at] !== NONE) heap.push(rank[at]!, at);
      const before = prev[at]!;
      if (before >= 0) {
        rank[before] = pair(before, at, after);
        if (rank[before] !== NONE) heap.push(rank[before]!, before);
      }
    }
    const ids: number[] = [];
    for (let i = 0; i < n; i = next[i]!) ids.push(id[i]!);
    return ids;
  }

  private idsOf(piece: string, starts: number[]): number[] {
    const ids: number[] = [];
    for (let i = 0; i + 1 < starts.length; i++) {
      const id = this.ranks.get(piece.substring(starts[i]!, starts[i + 1]!));
      // Every single byte is a token, so a part is always in the vocabulary.
      if (id !== undefined) ids.push(id);
    }
    return ids;
  }
}

/** A binary min-heap of (rank, position) pairs, ordered by rank and then position, in two Int32Arrays. */
class PairHeap {
  private r: Int32Array;
  private p: Int32Array;
  size = 0;
  /** The rank and position of the last pop(). */
  rank = 0;
  pos = 0;
  constructor(capacity: number) {
    this.r = new Int32Array(Math.max(16, capacity));
    this.p = new Int32Array(Math.max(16, capacity));
  }
  push(rank: number, pos: number): void {
    if (this.size === this.r.length) {
      const r = new Int32Array(this.r.length * 2);
      const p = new Int32Array(this.p.length * 2);
      r.set(this.r);
      p.set(this.p);
      this.r = r;
      this.p = p;
    }
    const R = this.r;
    const P = this.p;
    let i = this.size++;
    while (i > 0) {
      const up = (i - 1) >> 1;
      const ur = R[up]!;
      if (ur < rank || (ur === rank && P[up]! < pos)) break;
      R[i] = ur;
      P[i] = P[up]!;
      i = up;
    }
    R[i] = rank;
    P[i] = pos;
  }
  pop(): void {
    const R = this.r;
    const P = this.p;
    this.rank = R[0]!;
    this.pos = P[0]!;
    const n = --this.size;
    const lr = R[n]!;
    const lp = P[n]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && (R[c + 1]! < R[c]! || (R[c + 1] === R[c] && P[c + 1]! < P[c]!))) c++;
      const cr = R[c]!;
      if (cr > lr || (cr === lr && P[c]! > lp)) break;
      R[i] = cr;
      P[i] = P[c]!;
      i = c;
    }
    R[i] = lr;
    P[i] = lp;
  }
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The UTF-8 bytes of `s` as a binary string; lone surrogates become U+FFFD as TextEncoder makes them. */
function utf8Binary(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      out += s[i];
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        out += String.fromCharCode(
          0xf0 | (c >> 18),
          0x80 | ((c >> 12) & 0x3f),
          0x80 | ((c >> 6) & 0x3f),
          0x80 | (c & 0x3f),
        );
        continue;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x800) out += String.fromCharCode(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    else out += String.fromCharCode(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
  return out;
}

function latin1Bytes(s: string): Uint8Array {
  const b = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
  return b;
}
