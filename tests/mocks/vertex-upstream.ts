// A stand-in for Vertex AI: the OAuth token endpoint (verifies the RS256 JWT against the service
// account's public key and its claims, then issues a short-lived access token) and the prediction
// endpoints for Claude (rawPredict / streamRawPredict) and Gemini (generateContent / stream).
import { serve, sseResponse, type MockUpstream } from "./recorder.ts";
import { claudeEvents, claudeReply, claudeRequestProblem, claudeSseFrame } from "./claude-upstream.ts";
import { geminiAnswer, geminiRoute } from "./gemini-upstream.ts";

export interface TestServiceAccount {
  json: Record<string, string>;
  publicKey: CryptoKey;
}

/** A fresh RSA key pair wrapped as a service-account JSON whose token_uri points at tokenUri. */
export async function makeServiceAccount(tokenUri: string, project = "test-project"): Promise<TestServiceAccount> {
  const pair = await crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  );
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey("pkcs8", pair.privateKey)).toString("base64");
  const pem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join("\n")}\n-----END PRIVATE KEY-----\n`;
  return {
    json: {
      type: "service_account",
      project_id: project,
      private_key_id: "kid-1",
      private_key: pem,
      client_email: `gateway@${project}.iam.gserviceaccount.com`,
      client_id: "1",
      token_uri: tokenUri,
    },
    publicKey: pair.publicKey,
  };
}

export interface VertexMock extends MockUpstream {
  /** Access tokens issued so far. */
  issued: string[];
  /** Lets the test register the service account once it knows the mock's URL. */
  trust(sa: TestServiceAccount): void;
}

export function startVertexUpstream(opts: { expiresIn?: number } = {}): VertexMock {
  const issued: string[] = [];
  let trusted: TestServiceAccount | null = null;
  const mock = serve(async (_req, rec) => {
    if (rec.path === "/token") {
      const form = new URLSearchParams(rec.raw);
      if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer")
        return Response.json({ error: "unsupported_grant_type" }, { status: 400 });
      const [h, c, s] = (form.get("assertion") ?? "").split(".");
      if (!h || !c || !s || !trusted)
        return Response.json({ error: "invalid_grant", error_description: "Invalid JWT" }, { status: 400 });
      const ok = await crypto.subtle.verify(
        "RSASSA-PKCS1-v1_5",
        trusted.publicKey,
        Buffer.from(s, "base64url"),
        new TextEncoder().encode(`${h}.${c}`),
      );
      const header = JSON.parse(Buffer.from(h, "base64url").toString());
      const claims = JSON.parse(Buffer.from(c, "base64url").toString());
      const now = Math.floor(Date.now() / 1000);
      if (!ok || header.alg !== "RS256")
        return Response.json({ error: "invalid_grant", error_description: "Invalid JWT Signature." }, { status: 400 });
      if (
        claims.iss !== trusted.json.client_email
        || claims.aud !== trusted.json.token_uri
        || claims.scope !== "https://www.googleapis.com/auth/cloud-platform"
        || claims.exp <= now
        || claims.exp - claims.iat > 3600
      ) {
        return Response.json({ error: "invalid_grant", error_description: "Invalid JWT claims." }, { status: 400 });
      }
      const token = `ya29.test-${issued.length + 1}`;
      issued.push(token);
      return Response.json({ access_token: token, expires_in: opts.expiresIn ?? 3599, token_type: "Bearer" });
    }
    const bearer = (rec.headers.authorization ?? "").replace(/^Bearer /, "");
    if (!issued.includes(bearer)) {
      return Response.json(
        { error: { code: 401, message: "Request had invalid authentication credentials.", status: "UNAUTHENTICATED" } },
        { status: 401 },
      );
    }
    const claude =
      /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/.exec(
        rec.path,
      );
    if (claude) {
      const body = rec.body;
      if (body?.model !== undefined)
        return Response.json(
          { type: "error", error: { type: "invalid_request_error", message: "model: Extra inputs are not permitted" } },
          { status: 400 },
        );
      if (body?.anthropic_version !== "vertex-2023-10-16")
        return Response.json(
          { type: "error", error: { type: "invalid_request_error", message: "anthropic_version: Field required" } },
          { status: 400 },
        );
      const problem = claudeRequestProblem(body, false, false);
      if (problem)
        return Response.json(
          { type: "error", error: { type: "invalid_request_error", message: problem } },
          { status: 400 },
        );
      const model = decodeURIComponent(claude[3]!);
      if (claude[4] === "streamRawPredict") return sseResponse(claudeEvents(body, model).map(claudeSseFrame));
      return Response.json(claudeReply(body, model));
    }
    if (/^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/google\/models\//.test(rec.path)) {
      const route = geminiRoute(rec.path);
      if (route) {
        if ((rec.body?.contents ?? []).some((c: any) => !c.role)) {
          return Response.json(
            { error: { code: 400, message: "Please use a valid role: user, model.", status: "INVALID_ARGUMENT" } },
            { status: 400 },
          );
        }
        return geminiAnswer(route, rec.body, rec.search);
      }
    }
    return Response.json({ error: { code: 404, message: "not found", status: "NOT_FOUND" } }, { status: 404 });
  });
  return { ...mock, issued, trust: (sa) => (trusted = sa) };
}
