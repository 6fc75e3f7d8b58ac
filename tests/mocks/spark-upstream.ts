// A stand-in for iFlytek Spark's websocket API: the handshake URL must carry a valid HMAC-SHA256 signature
// (host, date and request line, signed with the API secret; authorization names the API key) and a date
// within five minutes, else the upgrade is refused with 401 and iFlytek's JSON message. Each version path
// (/v2.1/chat, /v3.5/chat, /chat/pro-128k, ...) expects its own `domain`. The answer comes in frames with
// status 0/1/2, the last carrying the usage; a wrong app_id gets an error frame (code 10313).
import { createHmac } from "node:crypto";

export const SPARK_TEXT = "Hello from Spark.";
export const SPARK_USAGE = { question_tokens: 4, prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
const DOMAINS: Record<string, string> = {
  "/v1.1/chat": "lite",
  "/v2.1/chat": "generalv2",
  "/v3.1/chat": "generalv3",
  "/v3.5/chat": "generalv3.5",
  "/v4.0/chat": "4.0Ultra",
  "/chat/pro-128k": "pro-128k",
  "/chat/max-32k": "max-32k",
};

export interface SparkMock {
  url: string;
  /** every handshake: its path and whether the signature held */
  handshakes: { path: string; ok: boolean }[];
  /** every request frame received */
  frames: any[];
  stop(): void;
}

export function startSparkUpstream(
  creds = { appId: "spark-app", apiSecret: "spark-secret", apiKey: "spark-key" },
): SparkMock {
  const mock: SparkMock = { url: "", handshakes: [], frames: [], stop: () => server.stop(true) };
  const server = Bun.serve<{ path: string }>({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req, srv) {
      const url = new URL(req.url);
      const q = url.searchParams;
      const date = q.get("date") ?? "";
      let ok = false;
      try {
        const auth = Buffer.from(q.get("authorization") ?? "", "base64").toString();
        const sig = /signature="([^"]+)"/.exec(auth)?.[1];
        const expected = createHmac("sha256", creds.apiSecret)
          .update(`host: ${q.get("host")}\ndate: ${date}\nGET ${url.pathname} HTTP/1.1`)
          .digest("base64");
        ok =
          auth.includes(`api_key="${creds.apiKey}"`)
          && sig === expected
          && q.get("host") === url.host
          && Math.abs(Date.now() - Date.parse(date)) < 300_000;
      } catch {}
      mock.handshakes.push({ path: url.pathname, ok });
      if (!ok) return Response.json({ message: "HMAC signature cannot be verified" }, { status: 401 });
      if (!DOMAINS[url.pathname]) return Response.json({ message: "Not Found" }, { status: 404 });
      if (srv.upgrade(req, { data: { path: url.pathname } })) return undefined;
      return new Response("upgrade expected", { status: 400 });
    },
    websocket: {
      message(ws, raw) {
        const frame = JSON.parse(String(raw));
        mock.frames.push(frame);
        const sid = "cht000b8d4@dx1";
        if (frame?.header?.app_id !== creds.appId) {
          ws.send(JSON.stringify({ header: { code: 10313, message: "appid cannot match apikey", sid, status: 2 } }));
          ws.close();
          return;
        }
        if (frame?.parameter?.chat?.domain !== DOMAINS[ws.data.path]) {
          ws.send(
            JSON.stringify({ header: { code: 10404, message: "domain is not valid for this url", sid, status: 2 } }),
          );
          ws.close();
          return;
        }
        const parts = ["Hello", " from", " Spark."];
        parts.forEach((content, i) => {
          const status = i === 0 ? 0 : i === parts.length - 1 ? 2 : 1;
          const out: any = {
            header: { code: 0, message: "Success", sid, status },
            payload: { choices: { status, seq: i, text: [{ content, role: "assistant", index: 0 }] } },
          };
          if (status === 2) out.payload.usage = { text: SPARK_USAGE };
          ws.send(JSON.stringify(out));
        });
      },
    },
  });
  mock.url = `ws://127.0.0.1:${server.port}`;
  return mock;
}
