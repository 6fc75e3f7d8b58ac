// The three coding-agent CLIs, run as a user would set them up (see docs/agents.md): a temporary HOME with
// their settings, the gateway as base URL and a lane's sk- key, telemetry and update checks off.
import { join } from "node:path";
import { runCli, tempHome, writeFile, type Lane } from "./harness.ts";

/** How long one CLI run may take before it is killed (a test's limit adds a margin to it). */
export const RUN_MS = 90_000;
export const TEST_MS = RUN_MS + 30_000;

/** The models the CLIs ask for when given none. */
export const CLAUDE_CODE_MODEL = "claude-opus-5-5";
export const CODEX_MODEL = "gpt-6.2-sol";
/** Gemini CLI's prompt-rating model, and the model a prompt rated simple is sent to. */
export const GEMINI_ROUTER_MODEL = "gemini-3.5-flash-lite";
export const GEMINI_SIMPLE_MODEL = "gemini-3.8-flash";

export async function claude(lane: Lane, prompt: string, work: string, home: string) {
  const run = await runCli("claude", ["-p", prompt, "--output-format", "json"], {
    cwd: work,
    timeoutMs: RUN_MS,
    env: {
      HOME: home,
      ANTHROPIC_BASE_URL: lane.base,
      ANTHROPIC_API_KEY: lane.key,
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_ERROR_REPORTING: "1",
    },
  });
  let out: any = null;
  try {
    out = JSON.parse(run.stdout);
  } catch {}
  return { run, out };
}

export async function codex(lane: Lane, prompt: string, model: string | null, files: Record<string, string> = {}) {
  const t = tempHome("codex");
  for (const [name, text] of Object.entries(files)) writeFile(join(t.work, name), text);
  const codexHome = join(t.home, ".codex");
  writeFile(
    join(codexHome, "config.toml"),
    [
      'model_provider = "switchyard"',
      "",
      "[model_providers.switchyard]",
      'name = "Switchyard"',
      `base_url = "${lane.base}/v1"`,
      'env_key = "SWITCHYARD_API_KEY"',
      'wire_api = "responses"',
      "",
      "[analytics]",
      "enabled = false",
      "",
    ].join("\n"),
  );
  const args = ["exec", "--json", "--skip-git-repo-check", ...(model ? ["-m", model] : []), prompt];
  const run = await runCli("codex", args, {
    cwd: t.work,
    timeoutMs: RUN_MS,
    env: { HOME: t.home, CODEX_HOME: codexHome, SWITCHYARD_API_KEY: lane.key },
  });
  const events = run.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
  const messages = events
    .filter((e) => e.type === "item.completed" && e.item?.type === "agent_message")
    .map((e) => e.item.text as string);
  return { run, events, messages, work: t.work, cleanup: t.cleanup };
}

export async function gemini(lane: Lane, prompt: string, files: Record<string, string> = {}) {
  const t = tempHome("gemini");
  for (const [name, text] of Object.entries(files)) writeFile(join(t.work, name), text);
  writeFile(
    join(t.home, ".gemini", "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "gemini-api-key" } },
      general: {
        disableAutoUpdate: true,
        disableUpdateNag: true,
        enableAutoUpdate: false,
        enableAutoUpdateNotification: false,
      },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
    }),
  );
  const run = await runCli("gemini", ["-p", prompt, "--output-format", "json"], {
    cwd: t.work,
    timeoutMs: RUN_MS,
    env: {
      HOME: t.home,
      GEMINI_API_KEY: lane.key,
      GOOGLE_GEMINI_BASE_URL: lane.base,
      GEMINI_CLI_NO_RELAUNCH: "true",
      GEMINI_CLI_TRUST_WORKSPACE: "true",
    },
  });
  let out: any = null;
  try {
    out = JSON.parse(run.stdout.slice(run.stdout.indexOf("{")));
  } catch {}
  return { run, out, work: t.work, cleanup: t.cleanup };
}
