// The text a stream generated, gathered piece by piece for billing (token counting when the upstream sends
// no usage, cut streams). `text += piece` makes JavaScriptCore build a rope: one cell per piece and the
// piece's own string, ~80 bytes a chunk kept until the stream ends — 16 MB over a 200,000-chunk stream, the
// climb scripts/bench/memory.ts showed through a long stream. Here pieces are joined into flat strings a
// block at a time, so a stream keeps its characters and little else.

/** Pieces joined into one flat string at a time. */
const PIECES_PER_BLOCK = 1024;
/** Blocks of one level joined into one block of the next: every character is copied once per level. */
const BLOCKS_PER_LEVEL = 32;

export class TextBuffer {
  private pending: string[] = [];
  /** levels[k]: flat strings of about PIECES_PER_BLOCK × BLOCKS_PER_LEVEL^k pieces, oldest first. */
  private levels: string[][] = [];

  add(piece: string): void {
    if (!piece) return;
    this.pending.push(piece);
    if (this.pending.length >= PIECES_PER_BLOCK) this.seal();
  }

  /** Everything added so far, as one flat string. */
  toString(): string {
    this.seal();
    const flat: string[] = [];
    for (let k = this.levels.length - 1; k >= 0; k--) flat.push(...this.levels[k]);
    if (flat.length <= 1) return flat[0] ?? "";
    const out = flat.join("");
    // Kept joined, at the top level: reading again copies nothing, and later pieces still join in small blocks.
    const top = this.levels.length - 1;
    this.levels = this.levels.map((_, k) => (k === top ? [out] : []));
    return out;
  }

  private seal(): void {
    if (this.pending.length === 0) return;
    let block = this.pending.join("");
    this.pending = [];
    for (let k = 0; ; k++) {
      const level = (this.levels[k] ??= []);
      level.push(block);
      if (level.length < BLOCKS_PER_LEVEL) return;
      block = level.join("");
      this.levels[k] = [];
    }
  }
}
