// OpenAI chat features that only OpenAI-format upstreams have: a converted channel refuses them with a 400
// naming the feature rather than answering without it. (Sampling hints with no equivalent upstream — seed,
// penalties and logit_bias on Claude — change no shape of the answer and are left out.)
import { AppError } from "../../http/errors.ts";
import type { OpenAIChatRequest } from "./claude/wire.ts";

export function refuseOpenAIOnly(req: OpenAIChatRequest, channel: string): void {
  if (req.logprobs === true || (req.top_logprobs != null && req.top_logprobs !== 0)) {
    throw new AppError(400, `logprobs are not available on this channel (${channel})`);
  }
  const modalities = Array.isArray(req.modalities) ? req.modalities : [];
  if (req.audio || modalities.includes("audio"))
    throw new AppError(400, `audio output is not available on this channel (${channel})`);
  if (req.web_search_options != null)
    throw new AppError(400, `web_search_options (OpenAI's web search) is not available on this channel (${channel})`);
}
