// What the agent mocks answer, decided once for every wire format. A test steers the conversation from its
// prompt: each `#tool NAME ARGS` in the user's text (ARGS is JSON: an object for a function tool, a string
// for a free-form custom tool) is called in turn, one per model turn, as long as the request offers a tool
// of that name; once every call has its result, the answer is `Tool said: <the last result>`, so the client
// only shows it after its tool really ran and its output came back. A prompt without directives gets the
// mock's plain text. Structured output (a JSON schema asked for) is answered with a value fitting it.
import { sampleFor } from "./schema.ts";

/** A tool the request offers, as the wire format declares it. */
export interface OfferedTool {
  name: string;
  /** "function": JSON arguments; "custom": free-form text input. */
  kind: "function" | "custom";
  /** A function tool's JSON Schema (lower- or upper-case types). */
  schema?: any;
}

/** The conversation as every wire format can describe it. */
export interface Turn {
  /** The user's texts, in order (tool results not included). */
  userTexts: string[];
  tools: OfferedTool[];
  /** The text of every tool result in the conversation, in order. */
  results: string[];
  /** The JSON schema the answer must fit, when structured output is asked for. */
  jsonSchema?: unknown;
  /** JSON asked for without a schema (json_object, responseMimeType alone). */
  jsonObject?: boolean;
  /** The tool the request forces the model to call (a tool_choice naming one, or "any" with a single tool). */
  forced?: OfferedTool;
}

export type Step =
  | { kind: "text"; text: string }
  | { kind: "call"; name: string; tool: OfferedTool; input: string; args: Record<string, unknown> | null };

export interface Directive {
  name: string;
  args: unknown;
}

const DIRECTIVE = /#tool\s+([A-Za-z0-9_.:-]+)\s+/g;

/** The `#tool NAME ARGS` directives of a text, in order. */
export function directives(text: string): Directive[] {
  const out: Directive[] = [];
  const starts = [...text.matchAll(DIRECTIVE)];
  for (const [i, m] of starts.entries()) {
    const from = m.index! + m[0].length;
    const to = i + 1 < starts.length ? starts[i + 1]!.index! : text.length;
    // The arguments run to the end of the JSON value: try the longest prefix that parses.
    const rest = text.slice(from, to).trim();
    let args: unknown;
    for (let end = rest.length; end > 0; end--) {
      try {
        args = JSON.parse(rest.slice(0, end));
        break;
      } catch {}
    }
    if (args !== undefined) out.push({ name: m[1]!, args });
  }
  return out;
}

/** The one string property of a function tool's schema, when it has exactly one (a converted custom tool). */
function soleStringProperty(schema: any): string | null {
  const props = Object.entries(schema?.properties ?? {});
  if (props.length !== 1) return null;
  const [name, sub] = props[0] as [string, any];
  return String(sub?.type ?? "").toLowerCase() === "string" ? name : null;
}

export function decide(turn: Turn, plainText: string): Step {
  // A forced call is answered with arguments fitting the tool's schema, as a model does.
  if (turn.forced) {
    const args = (
      turn.forced.kind === "function" ? sampleFor(turn.forced.schema ?? { type: "object" }) : null
    ) as Record<string, unknown> | null;
    return { kind: "call", name: turn.forced.name, tool: turn.forced, input: args ? JSON.stringify(args) : "x", args };
  }
  if (turn.jsonSchema !== undefined) return { kind: "text", text: JSON.stringify(sampleFor(turn.jsonSchema)) };
  if (turn.jsonObject) return { kind: "text", text: JSON.stringify({ answer: plainText }) };
  const prompt = turn.userTexts.find((t) => directives(t).length > 0);
  const wanted = prompt ? directives(prompt) : [];
  const done = turn.results.length;
  const next = wanted[done];
  if (next) {
    // A namespaced tool (Codex's `functions` namespace) reaches a chat upstream under a qualified name.
    const tool =
      turn.tools.find((t) => t.name === next.name)
      ?? turn.tools.find((t) => t.name.endsWith(`__${next.name}`) || t.name.endsWith(`.${next.name}`));
    if (!tool)
      return {
        kind: "text",
        text: `No tool named ${next.name} was offered (offered: ${turn.tools.map((t) => t.name).join(", ")}).`,
      };
    if (tool.kind === "custom") {
      const input = typeof next.args === "string" ? next.args : JSON.stringify(next.args);
      return { kind: "call", name: tool.name, tool, input, args: null };
    }
    // A free-form input asked of a function tool: the tool is a custom one converted to a function of one
    // string argument.
    const prop = typeof next.args === "string" ? soleStringProperty(tool.schema) : null;
    const args = (prop ? { [prop]: next.args } : next.args) as Record<string, unknown>;
    return { kind: "call", name: tool.name, tool, input: JSON.stringify(args), args };
  }
  if (done > 0) return { kind: "text", text: `Tool said: ${turn.results[done - 1]!.slice(0, 400)}` };
  return { kind: "text", text: plainText };
}

/** The tool a tool_choice forces: one named, or the only one offered when any call is required. */
export function forcedTool(
  tools: OfferedTool[],
  named: string | null | undefined,
  anyRequired: boolean,
): OfferedTool | undefined {
  if (named) return tools.find((t) => t.name === named);
  return anyRequired && tools.length === 1 ? tools[0] : undefined;
}

/** The text of a tool result in any of the shapes the formats use (string, blocks, parts, objects). */
export function resultText(v: unknown): string {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map(resultText).join("");
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (typeof o.text === "string") return o.text;
    if (o.content !== undefined) return resultText(o.content);
    if (o.output !== undefined) return resultText(o.output);
    return JSON.stringify(v);
  }
  return v === undefined || v === null ? "" : String(v);
}

/** Token counts a mock reports for every answer, in neutral terms; each format spells them its own way. */
export interface AgentUsage {
  /** Input tokens read neither from nor into the cache. */
  input: number;
  cacheRead: number;
  /** Claude only: tokens written to the cache (5-minute TTL, then 1-hour TTL). */
  cacheWrite5m: number;
  cacheWrite1h: number;
  output: number;
}
