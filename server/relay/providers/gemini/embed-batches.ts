// batchEmbedContents takes at most 100 requests per call: a larger input goes up in slices, a few at
// a time, and their embeddings are joined in input order into the one answer the relay reads.

/** Gemini's limit on requests in one batchEmbedContents call. */
export const EMBED_BATCH_MAX = 100;
/** Slices in flight at once: enough to hide the round trips, few enough to spare the key's rate limit. */
const CONCURRENCY = 4;

/**
 * Sends a built batchEmbedContents request (after param_override) as slices of EMBED_BATCH_MAX. Answers
 * as one upstream call would: the joined embeddings, or the first failing slice's own response, so the
 * relay's error handling, status mapping and retries apply unchanged. The rest stop at a failure.
 */
export async function sendEmbedBatches(url: string, init: RequestInit): Promise<Response> {
  const body = JSON.parse(String(init.body));
  const requests: unknown[] = Array.isArray(body?.requests) ? body.requests : [];
  if (requests.length <= EMBED_BATCH_MAX) return fetch(url, init);
  const slices: unknown[][] = [];
  for (let i = 0; i < requests.length; i += EMBED_BATCH_MAX) slices.push(requests.slice(i, i + EMBED_BATCH_MAX));

  const stop = new AbortController();
  const signal = init.signal ? AbortSignal.any([init.signal, stop.signal]) : stop.signal;
  const results: unknown[][] = new Array(slices.length);
  // Set by the workers; typed wide so the checks after Promise.all are not narrowed to their initial null.
  let failure = null as Response | null;
  let error = null as { reason: unknown } | null;
  let next = 0;
  const worker = async () => {
    try {
      while (!stop.signal.aborted && next < slices.length) {
        const i = next++;
        const res = await fetch(url, { ...init, signal, body: JSON.stringify({ ...body, requests: slices[i] }) });
        // Read before the others are stopped: aborting the shared signal would cut this body too.
        const text = await res.text();
        if (stop.signal.aborted) return;
        const list = res.ok ? JSON.parse(text)?.embeddings : null;
        if (!res.ok) failure = new Response(text, { status: res.status, headers: res.headers });
        else if (!Array.isArray(list) || list.length !== slices[i]!.length)
          failure = mismatch(Array.isArray(list) ? list.length : 0, slices[i]!.length);
        else results[i] = list;
        if (failure) stop.abort();
      }
    } catch (e) {
      // The first error stands for the call (timeout, client gone, connection); the others are its echo.
      if (stop.signal.aborted) return;
      error = { reason: e };
      stop.abort();
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, slices.length) }, worker));
  if (failure) return failure;
  if (error) throw error.reason;
  return Response.json({ embeddings: results.flat() });
}

/** A slice answered with a different number of embeddings: the indexes would no longer match the inputs. */
function mismatch(got: number, sent: number): Response {
  const message = `the upstream answered ${got} embeddings for ${sent} inputs`;
  return Response.json({ error: { code: 502, message, status: "INTERNAL" } }, { status: 502 });
}
