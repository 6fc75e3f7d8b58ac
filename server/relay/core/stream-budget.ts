// A stream's meter against its hold: the output tokens the hold pays (after the prompt it was worked out for),
// checked as the stream passes. A token is at least one byte of the upstream's stream, so nothing is counted
// until the upstream has sent more bytes than the hold pays tokens for: the usual stream, well within its hold,
// is never counted here. After a count, the next comes where the bytes per token so far say the hold runs out.
// Past the hold, the hold is extended from the balance when it can be (a rich payer's model answering longer
// than its catalogued limit); when it cannot, the stream is cut.
import type { AppDeps } from "../../deps.ts";
import type { AppError } from "../../http/errors.ts";
import type { StreamMapper } from "../providers/types.ts";
import { affordableOutput, worstCaseQuota } from "../billing.ts";
import { countGenerated } from "./meter.ts";
import { extendHold, type Served } from "./settle.ts";

/** A stream past what its hold pays asks the balance for a hold of this many times what it has generated, and
 * EXTEND_TOKENS more (as much of it as the balance pays, at least what it has generated): a long answer extends
 * a few times, not per chunk, and its text is counted a few times, not per chunk. */
const EXTEND_FACTOR = 8;
const EXTEND_TOKENS = 4096;
/** The bytes per token of a stream predict where its hold runs out once this many tokens were counted (the first
 * frames are mostly framing). */
const PREDICT_AFTER_TOKENS = 16;
/** Text counted exactly per piece; a longer piece is counted over this much and the rest at its rate. */
const SAMPLE_CHARS = 256 * 1024;
/** A text up to this long is counted again whole to decide a cut (in the worker). */
const RECOUNT_CHARS = 64 * 1024;
/** A bound past every hold's tokens: affordableOutput's search up to it. */
const NO_BOUND = Number.MAX_SAFE_INTEGER;

export class StreamBudget {
  private bytes = 0;
  private due: number;
  /** output tokens the hold pays */
  private paid: number;
  /** tokens of the text counted so far (a sum of pieces), and the characters counted */
  private counted = 0;
  private countedChars = 0;
  /** counts summed into `counted` since the whole text was last counted */
  private pieces = 0;

  private constructor(
    private deps: AppDeps,
    private s: Served,
    private prompt: number,
  ) {
    this.paid = affordableOutput(s.price, prompt, s.hold.amount, NO_BOUND);
    this.due = this.paid + 1;
  }

  /** The meter of a streamed call billed per token; null for one that cannot cost more than its hold (a price per call). */
  static of(deps: AppDeps, s: Served): StreamBudget | null {
    return s.prompt === undefined || s.price.perCall ? null : new StreamBudget(deps, s, s.prompt);
  }

  /** The upstream sent `n` more bytes: whether the generated text must be looked at (within() then). */
  passed(n: number): boolean {
    this.bytes += n;
    return this.bytes >= this.due;
  }

  /**
   * Looks at the text generated so far: while what it can be at most (the tokens counted, plus a token per byte
   * not counted yet, or the upstream's own running count) is within what the hold pays, nothing is counted.
   * Past that, the uncounted text is counted in the tokenizer's worker and, past what the hold pays, the hold is
   * extended. Null while the hold pays for the stream; the error naming the short balance when it cannot be
   * extended: the stream is cut there.
   */
  async within(mapper: StreamMapper): Promise<AppError | null> {
    const text = mapper.generatedText();
    // A report still without its output count would count the text on the event loop to answer: not read then.
    const reported = mapper.countsText?.() ? 0 : (mapper.usage()?.completion_tokens ?? 0);
    const uncounted = text.length > this.countedChars ? Buffer.byteLength(text.slice(this.countedChars)) : 0;
    let tokens = Math.max(this.counted + uncounted, reported);
    if (tokens > this.paid && uncounted > 0) {
      this.counted += await countPiece(text.slice(this.countedChars));
      this.countedChars = text.length;
      this.pieces++;
      tokens = Math.max(this.counted, reported);
    }
    if (tokens > this.paid && this.counted - this.pieces <= this.paid) {
      // Counted in pieces, the sum can be up to a token per piece above the whole text's count: the whole text
      // decides, counted again while that is cheap, else the sum less a token per piece (the client's favour).
      this.counted = text.length <= RECOUNT_CHARS ? await countGenerated(text) : this.counted - this.pieces;
      this.pieces = 0;
      tokens = Math.max(this.counted, reported);
    }
    if (tokens > this.paid) {
      const want =
        worstCaseQuota(this.s.price, this.prompt, EXTEND_FACTOR * tokens + EXTEND_TOKENS) - this.s.hold.amount;
      const least = worstCaseQuota(this.s.price, this.prompt, tokens) - this.s.hold.amount;
      const short = await extendHold(this.deps, this.s, want, Math.max(1, least));
      if (short) return short;
      this.paid = affordableOutput(this.s.price, this.prompt, this.s.hold.amount, NO_BOUND);
    }
    // The next look: where the stream's bytes per token so far say the hold runs out, halfway there (a stream
    // whose text grows denser still gets looked at before it is past), and never before the bytes that many
    // tokens need at the least.
    const left = this.paid - tokens;
    const perToken =
      this.counted >= PREDICT_AFTER_TOKENS && this.countedChars === text.length ? this.bytes / this.counted : 1;
    this.due = this.bytes + Math.max(left + 1, Math.floor((left * perToken) / 2));
    return null;
  }
}

/** A piece of text's tokens, counted in the worker: a long piece (a stream well past a hold it could extend) is
 * counted over its first SAMPLE_CHARS and the rest taken at that rate, so a long stream's text is not all counted. */
async function countPiece(piece: string): Promise<number> {
  if (piece.length <= SAMPLE_CHARS) return countGenerated(piece);
  return Math.ceil(((await countGenerated(piece.slice(0, SAMPLE_CHARS))) * piece.length) / SAMPLE_CHARS);
}
