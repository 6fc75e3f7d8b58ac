// UPDATE statements written as plain SQL, the same text Kysely compiles (tests/server/update-text.test.ts holds
// them equal; hot-path rule 13). The write-behind updates one balance row per user and token a slice touched;
// built through Kysely's query tree, with a thousand users calling, those compiles were a large share of the
// event loop (scripts/bench/inprocess.ts, USERS=1000). The text is cached per shape.
import { identifierQuoter, placeholders, type Dialect } from "./dialect.ts";

/** `column = column + value`, `column = column - value` or `column = value`. */
export type SetTerm = readonly [column: string, op: "+" | "-" | "=", value: unknown];

const texts = new Map<string, string>();
const TEXT_CACHE_SIZE = 200;

function updateText(
  dialect: Dialect,
  table: string,
  sets: readonly SetTerm[],
  where: readonly (readonly [string, unknown])[],
): string {
  let key = `${dialect}|${table}|`;
  for (const [c, op] of sets) key += `${c}${op},`;
  for (const [c] of where) key += `|${c}`;
  let text = texts.get(key);
  if (text) return text;
  const q = identifierQuoter(dialect);
  const ph = placeholders(dialect);
  const assignments = sets.map(([c, op]) => (op === "=" ? `${q(c)} = ${ph()}` : `${q(c)} = ${q(c)} ${op} ${ph()}`));
  const conditions = where.map(([c]) => `${q(c)} = ${ph()}`);
  text = `update ${q(table)} set ${assignments.join(", ")} where ${conditions.join(" and ")}`;
  if (texts.size >= TEXT_CACHE_SIZE) texts.clear();
  texts.set(key, text);
  return text;
}

/** `update table set … where a = ? and b = ?`, its parameters in placeholder order. */
export function updateStatement(
  dialect: Dialect,
  table: string,
  sets: readonly SetTerm[],
  where: readonly (readonly [string, unknown])[],
): { sql: string; parameters: unknown[] } {
  const parameters: unknown[] = [];
  for (const s of sets) parameters.push(s[2]);
  for (const w of where) parameters.push(w[1]);
  return { sql: updateText(dialect, table, sets, where), parameters };
}
