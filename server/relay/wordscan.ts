// Finds any of a list of words in a text in one pass (Aho-Corasick), so the sensitive-word check costs the
// same for one word or a thousand (hot-path rule 6): `text.includes(word)` per word multiplies a long prompt's
// scan by the number of words, and one alternation RegExp backtracks into seconds on some texts.
//
// The automaton runs over UTF-16 code units. Only the characters that occur in the words get a column in
// its transition table; every other character shares column 0. Lists whose table would exceed
// MAX_TABLE cells (thousands of words over thousands of distinct characters) use per-state maps and
// failure links instead: still linear, a few times slower per character.

const MAX_TABLE = 4 * 1024 * 1024;

export class WordScan {
  private readonly words: string[];
  private readonly column = new Uint16Array(65536);
  private readonly width: number;
  /** Dense: next state by state * width + column. */
  private table: Int32Array | null = null;
  /** Sparse: the trie's own edges and failure links. */
  private edges: Map<number, number>[] = [];
  private fail: Int32Array = new Int32Array(0);
  /** The index of a word ending at each state (its own or through failure links), or -1. */
  private hit: Int32Array = new Int32Array(0);

  constructor(words: readonly string[]) {
    this.words = [...new Set(words.filter(Boolean))];
    let columns = 0;
    for (const w of this.words)
      for (let i = 0; i < w.length; i++)
        if (this.column[w.charCodeAt(i)] === 0) this.column[w.charCodeAt(i)] = ++columns;
    this.width = columns + 1;
    this.build();
  }

  get empty(): boolean {
    return this.words.length === 0;
  }

  private build(): void {
    // The trie: edges[state] maps a column to the next state.
    const edges: Map<number, number>[] = [new Map()];
    const own: number[] = [-1];
    this.words.forEach((w, index) => {
      let s = 0;
      for (let i = 0; i < w.length; i++) {
        const c = this.column[w.charCodeAt(i)]!;
        let t = edges[s]!.get(c);
        if (t === undefined) {
          t = edges.length;
          edges.push(new Map());
          own.push(-1);
          edges[s]!.set(c, t);
        }
        s = t;
      }
      if (own[s] === -1) own[s] = index;
    });
    const n = edges.length;
    const fail = new Int32Array(n);
    const hit = Int32Array.from(own);
    const dense = n * this.width <= MAX_TABLE ? new Int32Array(n * this.width) : null;
    // Breadth first: a state's failure link is known before its children's.
    const queue: number[] = [0];
    for (let q = 0; q < queue.length; q++) {
      const s = queue[q]!;
      if (hit[s] === -1 && s !== 0) hit[s] = hit[fail[s]!]!;
      if (dense)
        for (let c = 0; c < this.width; c++)
          dense[s * this.width + c] = s === 0 ? 0 : dense[fail[s]! * this.width + c]!;
      for (const [c, t] of edges[s]!) {
        fail[t] = s === 0 ? 0 : this.step(edges, fail, fail[s]!, c);
        if (dense) dense[s * this.width + c] = t;
        queue.push(t);
      }
    }
    this.fail = fail;
    this.hit = hit;
    if (dense) this.table = dense;
    else this.edges = edges;
  }

  private step(edges: Map<number, number>[], fail: Int32Array, s: number, c: number): number {
    for (;;) {
      const t = edges[s]!.get(c);
      if (t !== undefined) return t;
      if (s === 0) return 0;
      s = fail[s]!;
    }
  }

  /** The word that ends first in `text`, or null. */
  find(text: string): string | null {
    if (this.words.length === 0) return null;
    const column = this.column;
    const hit = this.hit;
    let s = 0;
    if (this.table) {
      const table = this.table;
      const width = this.width;
      for (let i = 0; i < text.length; i++) {
        s = table[s * width + column[text.charCodeAt(i)]!]!;
        if (hit[s] !== -1) return this.words[hit[s]!]!;
      }
      return null;
    }
    for (let i = 0; i < text.length; i++) {
      s = this.step(this.edges, this.fail, s, column[text.charCodeAt(i)]!);
      if (hit[s] !== -1) return this.words[hit[s]!]!;
    }
    return null;
  }
}
