// Every environment variable and command-line flag, typed, with its default. Nothing else reads process.env.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import pkg from "../package.json" with { type: "json" };
import { DEFAULT_DATABASE_TIMEOUTS, type DatabaseTimeouts } from "../db/timeouts.ts";
import { DEFAULT_REDIS_TIMEOUTS, type RedisTimeouts } from "./infra/cache.ts";
import type { PasswordScheme } from "./modules/user/password.ts";

export const VERSION: string = pkg.version;

export type DatabaseKind = "sqlite" | "postgres" | "mysql";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  database: { kind: DatabaseKind; url: string; sqlitePath: string; timeouts: DatabaseTimeouts };
  redisUrl: string | null;
  /** Redis: connecting, each command, and the circuit that stops asking a Redis that keeps failing (infra/cache.ts). */
  redis: RedisTimeouts;
  sessionSecret: string;
  /** true when SESSION_SECRET was generated and persisted by this process (single-instance only). */
  sessionSecretGenerated: boolean;
  syncFrequencySeconds: number;
  /** Batch interval of the write-behind queue for logs and counters. */
  batchUpdateIntervalMs: number;
  channelTestFrequencyMinutes: number;
  relayTimeoutMs: number;
  /** A stream whose client has taken nothing for this long (its connection full) is cut (STREAM_STALL_TIMEOUT). */
  streamStallMs: number;
  /** How streamed upstream calls are made (UPSTREAM_STREAM_CLIENT: socket, the default, or fetch) and the
   * protocols fetch() sends through a proxy from HTTP_PROXY / HTTPS_PROXY (the socket client leaves those to it). */
  streamClient: { enabled: boolean; proxiedProtocols: string[] };
  consoleDir: string | null;
  metricsEnabled: boolean;
  /** METRICS_TOKEN: when set, GET /metrics answers only `Authorization: Bearer <it>` (Prometheus' bearer_token). */
  metricsToken: string | null;
  /** GET /api/openapi.json and the /api/docs pages (API_DOCS_ENABLED, default true). */
  apiDocsEnabled: boolean;
  tz: string;
  nodeEnv: string;
  maxBodyBytes: number;
  shutdownGraceMs: number;
  /** When false (tests), management rate limits are switched off unless a test turns them on. */
  rateLimitEnabled: boolean;
  /** Take the client address from X-Forwarded-For / X-Real-IP (behind a reverse proxy). */
  trustProxy: boolean;
  /** Per-account sign-in throttling (modules/user/signin-throttle.ts): failed checks allowed, from any address,
   * before the account is locked for `lockoutSeconds` (SIGNIN_MAX_FAILURES, 0 = off; SIGNIN_LOCKOUT_SECONDS). */
  signin: { maxFailures: number; lockoutSeconds: number };
  /** Cloudflare Turnstile's siteverify endpoint (TURNSTILE_VERIFY_URL; tests point it at a local stand-in). */
  turnstileVerifyUrl: string;
  /** Test-only: lets quota-notification webhooks use http:// on 127.0.0.1/localhost (production is https only). */
  allowLoopbackWebhooks: boolean;
  /** This instance's name on the quota holds it takes (PostgreSQL/MySQL): stable across its restarts, so a
   * restarted instance refunds the holds of calls its previous life was running (INSTANCE_ID). */
  instanceId: string;
  /** Where the write-behind journals what it has not written yet ($DATA_DIR/journal; null: no journal, tests). */
  journalDir: string | null;
  /** A quota hold its instance stopped renewing for this long is refunded by any instance. */
  holdLeaseMs: number;
  /** How new password hashes are made (PASSWORD_HASH): bcrypt, the default, which new-api verifies, or argon2id,
   * which new-api cannot read (modules/user/password.ts). */
  passwordHash: PasswordScheme;
  /** Time between rounds of the task poller (TASK_POLL_INTERVAL seconds; 0 = no polling). */
  taskPollIntervalMs: number;
  /** An unfinished task older than this is failed and refunded (TASK_TIMEOUT_MINUTES). */
  taskTimeoutMs: number;
  /** OpenTelemetry traces of relay calls, exported over OTLP/HTTP; null (off) unless an endpoint is set. */
  tracing: TracingConfig | null;
}

/** The OTEL_* variables of the OpenTelemetry specification that Switchyard reads (server/infra/tracing.ts). */
export interface TracingConfig {
  /** Where spans are POSTed (OTLP/HTTP JSON): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else
   * OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  url: string;
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL: http/json (default) or http/protobuf. */
  protocol: "http/json" | "http/protobuf";
  /** OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_TRACES_HEADERS (k=v,k2=v2, values URL-encoded). */
  headers: Record<string, string>;
  /** OTEL_SERVICE_NAME (default switchyard). */
  serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES (k=v,...), added to service.name, service.version and service.instance.id. */
  resourceAttributes: Record<string, string>;
  /** OTEL_TRACES_SAMPLER (default parentbased_always_on) and OTEL_TRACES_SAMPLER_ARG (the ratio). */
  sampler: string;
  samplerRatio: number;
}

export interface CliFlags {
  help: boolean;
  version: boolean;
  port?: number;
  dataDir?: string;
  consoleDir?: string;
}

export const HELP = `Switchyard ${VERSION} - AI model API gateway

Usage: switchyard [--port N] [--data-dir DIR] [--console-dir DIR] [--healthcheck] [--help] [--version]

  --port N          listen on port N (env PORT, default 3000)
  --data-dir DIR    folder for SQLite and the generated session secret (env DATA_DIR, default ./data)
  --console-dir DIR serve the console from this folder instead of the embedded build (env CONSOLE_DIR)
  --healthcheck     exit 0 when the server on --port / PORT answers GET /api/status with 200, else 1
  --help            print this help and exit
  --version         print the version and exit

Every setting can also come from the environment (SQL_DSN, REDIS_CONN_STRING, SESSION_SECRET, ...);
docs/configuration.md lists them all.`;

export function parseFlags(argv: string[]): CliFlags {
  const flags: CliFlags = { help: false, version: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [name, inline] = a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    const value = () => inline ?? argv[++i];
    if (name === "--help" || name === "-h") flags.help = true;
    else if (name === "--version" || name === "-v") flags.version = true;
    else if (name === "--port") flags.port = Number(value());
    else if (name === "--data-dir") flags.dataDir = value();
    else if (name === "--console-dir") flags.consoleDir = value();
  }
  return flags;
}

/** one-api style MySQL DSN: user:pass@tcp(host:port)/db?params → mysql://user:pass@host:port/db */
export function normaliseDsn(dsn: string): { kind: DatabaseKind; url: string } {
  const d = dsn.trim();
  if (d === "") return { kind: "sqlite", url: "" };
  if (/^postgres(ql)?:\/\//i.test(d)) return { kind: "postgres", url: d };
  if (/^mysql:\/\//i.test(d)) return { kind: "mysql", url: d };
  const m = /^([^:@]*)(?::(.*))?@tcp\(([^)]+)\)\/([^?]*)(\?.*)?$/.exec(d);
  if (m) {
    const [, user, pass, hostPort, db, query] = m;
    const auth = encodeURIComponent(user) + (pass ? ":" + encodeURIComponent(pass) : "");
    // Go driver params such as parseTime/charset mean nothing to mysql2; drop them.
    void query;
    return { kind: "mysql", url: `mysql://${auth}@${hostPort}/${db}` };
  }
  if (/^(local|sqlite:)/i.test(d)) return { kind: "sqlite", url: "" };
  throw new Error(`SQL_DSN not understood: use postgres://..., mysql://... or user:pass@tcp(host:port)/db`);
}

function int(v: string | undefined, def: number): number {
  if (v === undefined || v.trim() === "") return def;
  const n = Number(v);
  return Number.isFinite(n) ? Math.trunc(n) : def;
}

function bool(v: string | undefined, def: boolean): boolean {
  if (v === undefined || v === "") return def;
  return v === "1" || v.toLowerCase() === "true";
}

/** Two instances on one host differ in port; the same instance restarted keeps host, data folder and port. */
function defaultInstanceId(dataDir: string, port: number): string {
  return createHash("sha256").update(`${hostname()}\n${dataDir}\n${port}`).digest("hex").slice(0, 24);
}

/** Reads (or creates once) the persisted session secret, so restarts keep sessions valid. */
function persistedSecret(dataDir: string): string {
  const file = join(dataDir, ".session_secret");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString("hex");
  writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}

export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  flags: CliFlags = { help: false, version: false },
): Config {
  const dataDir = resolve(flags.dataDir ?? env.DATA_DIR ?? "./data");
  const db = normaliseDsn(env.SQL_DSN ?? "");
  const sqlitePath = env.SQLITE_PATH ? resolve(env.SQLITE_PATH) : join(dataDir, "switchyard.db");
  let sessionSecret = env.SESSION_SECRET ?? "";
  let generated = false;
  if (!sessionSecret) {
    mkdirSync(dirname(sqlitePath), { recursive: true });
    sessionSecret = persistedSecret(dataDir);
    generated = true;
  }
  if (env.TZ) process.env.TZ = env.TZ;
  return {
    port: flags.port ?? int(env.PORT, 3000),
    host: env.HOST ?? "0.0.0.0",
    dataDir,
    database: {
      ...db,
      sqlitePath,
      timeouts: {
        connectMs: Math.max(0, int(env.SQL_CONNECT_TIMEOUT_MS, DEFAULT_DATABASE_TIMEOUTS.connectMs)),
        queryMs: Math.max(0, int(env.SQL_QUERY_TIMEOUT_MS, DEFAULT_DATABASE_TIMEOUTS.queryMs)),
      },
    },
    redisUrl: env.REDIS_CONN_STRING?.trim() || null,
    redis: {
      connectMs: Math.max(1, int(env.REDIS_CONNECT_TIMEOUT_MS, DEFAULT_REDIS_TIMEOUTS.connectMs)),
      commandMs: Math.max(1, int(env.REDIS_COMMAND_TIMEOUT_MS, DEFAULT_REDIS_TIMEOUTS.commandMs)),
      circuitFailures: Math.max(1, int(env.REDIS_CIRCUIT_FAILURES, DEFAULT_REDIS_TIMEOUTS.circuitFailures)),
      circuitOpenMs: Math.max(1, int(env.REDIS_CIRCUIT_OPEN_MS, DEFAULT_REDIS_TIMEOUTS.circuitOpenMs)),
    },
    sessionSecret,
    sessionSecretGenerated: generated,
    syncFrequencySeconds: int(env.SYNC_FREQUENCY, 60),
    batchUpdateIntervalMs: int(env.BATCH_UPDATE_INTERVAL, 1000),
    channelTestFrequencyMinutes: int(env.CHANNEL_TEST_FREQUENCY, 0),
    relayTimeoutMs: int(env.RELAY_TIMEOUT, 300) * 1000,
    streamStallMs: int(env.STREAM_STALL_TIMEOUT, 60) * 1000,
    streamClient: {
      enabled: (env.UPSTREAM_STREAM_CLIENT?.trim().toLowerCase() || "socket") !== "fetch",
      proxiedProtocols: [
        ...(env.HTTP_PROXY || env.http_proxy ? ["http:"] : []),
        ...(env.HTTPS_PROXY || env.https_proxy ? ["https:"] : []),
      ],
    },
    consoleDir: flags.consoleDir ?? env.CONSOLE_DIR ?? null,
    metricsEnabled: bool(env.METRICS_ENABLED, false),
    metricsToken: env.METRICS_TOKEN?.trim() || null,
    apiDocsEnabled: bool(env.API_DOCS_ENABLED, true),
    // Read on demand: starting Intl's time-zone data takes a noticeable part of start-up, and nothing there needs it.
    get tz() {
      return env.TZ ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    },
    nodeEnv: env.NODE_ENV ?? "production",
    maxBodyBytes: int(env.MAX_BODY_BYTES, 32 * 1024 * 1024),
    shutdownGraceMs: int(env.SHUTDOWN_GRACE_SECONDS, 30) * 1000,
    rateLimitEnabled: bool(env.RATE_LIMIT_ENABLED, true),
    trustProxy: bool(env.TRUST_PROXY, false),
    signin: {
      maxFailures: Math.max(0, int(env.SIGNIN_MAX_FAILURES, 10)),
      lockoutSeconds: Math.max(1, int(env.SIGNIN_LOCKOUT_SECONDS, 900)),
    },
    turnstileVerifyUrl: env.TURNSTILE_VERIFY_URL?.trim() || "https://challenges.cloudflare.com/turnstile/v0/siteverify",
    allowLoopbackWebhooks: false,
    instanceId: env.INSTANCE_ID?.trim().slice(0, 64) || defaultInstanceId(dataDir, flags.port ?? int(env.PORT, 3000)),
    journalDir: join(dataDir, "journal"),
    holdLeaseMs: 60_000,
    // Seconds, fractions allowed (tests poll fast); empty or unreadable = the default.
    taskPollIntervalMs: Math.round(
      Math.max(
        0,
        env.TASK_POLL_INTERVAL?.trim() && Number.isFinite(Number(env.TASK_POLL_INTERVAL))
          ? Number(env.TASK_POLL_INTERVAL)
          : 15,
      ) * 1000,
    ),
    taskTimeoutMs: Math.max(1, int(env.TASK_TIMEOUT_MINUTES, 60)) * 60_000,
    passwordHash: passwordScheme(env.PASSWORD_HASH),
    tracing: tracingConfig(env),
  };
}

function passwordScheme(v: string | undefined): PasswordScheme {
  const s = (v ?? "").trim().toLowerCase() || "bcrypt";
  if (s !== "bcrypt" && s !== "argon2id")
    throw new Error(`PASSWORD_HASH=${v} is not supported: use bcrypt (the default) or argon2id`);
  return s;
}

/** The OTEL_* key=value lists: comma-separated, values percent-decoded; malformed pairs are skipped. */
export function keyValues(v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (v ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    let value = pair.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {}
    if (key) out[key] = value;
  }
  return out;
}

/** Tracing is on when an OTLP endpoint is set and OTEL_SDK_DISABLED is not true. */
function tracingConfig(env: Record<string, string | undefined>): TracingConfig | null {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if ((!traces && !base) || bool(env.OTEL_SDK_DISABLED, false)) return null;
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG);
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim()
    || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim()
    || "http/json"
  ).toLowerCase();
  if (protocol !== "http/json" && protocol !== "http/protobuf") {
    throw new Error(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: use http/protobuf or http/json (the collector's OTLP/HTTP port, usually 4318)`,
    );
  }
  return {
    url: traces || `${base!.replace(/\/+$/, "")}/v1/traces`,
    protocol,
    headers: { ...keyValues(env.OTEL_EXPORTER_OTLP_HEADERS), ...keyValues(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) },
    serviceName: env.OTEL_SERVICE_NAME?.trim() || "switchyard",
    resourceAttributes: keyValues(env.OTEL_RESOURCE_ATTRIBUTES),
    sampler: env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || "parentbased_always_on",
    samplerRatio: env.OTEL_TRACES_SAMPLER_ARG?.trim() && Number.isFinite(ratio) ? Math.min(1, Math.max(0, ratio)) : 1,
  };
}
