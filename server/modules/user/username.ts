// What a username may be, and how one is found. A name is compared as people read it: NFKC-normalised (a
// full-width "ｒｏｏｔ" is "root") and without regard to case ("ROOT" is "root"), on every database. Names
// that would read as another account's are refused when they are chosen: invisible and control characters
// (zero-width spaces, direction overrides, NUL), letters of alphabets mixed the way look-alike attacks mix
// them (a Cyrillic "о" in a Latin "root"), and names written wholly in Cyrillic or Greek letters that each
// look Latin. Names already stored are left as they are; they still sign in.
import { sql, type RawBuilder } from "kysely";
import type { AppDeps } from "../../deps.ts";
import type { User } from "../../../db/schema.ts";
import { dialectOf } from "../../../db/dialect.ts";
import { badRequest } from "../../http/errors.ts";
import { USERNAME_MAX_LENGTH } from "../../catalogue/index.ts";

export const USERNAME_MSG = {
  empty: "username cannot be empty",
  long: `username must be at most ${USERNAME_MAX_LENGTH} characters`,
  invisible: "username must not contain control, invisible or text-direction characters",
  space: "username must not contain spaces",
  mixed: "username must not mix letters of different alphabets (such as Latin with Cyrillic or Greek)",
  lookalike: "username must not spell a Latin-looking name in Cyrillic or Greek letters",
  taken: "username is already taken",
} as const;

/** The form a name is stored and compared in (before case folding). */
export const normaliseUsername = (raw: string | null | undefined) => (raw ?? "").normalize("NFKC").trim();

/** The comparison key: two names with the same key are the same account's name. */
export const usernameKey = (name: string) => name.normalize("NFKC").toLowerCase().normalize("NFKC");

// Invisible or control: C* categories (Cc incl. NUL, Cf incl. zero-width and bidi controls, unassigned, private
// use, lone surrogates), line and paragraph separators, and what Unicode says to render as nothing (Hangul
// fillers, variation selectors, the combining grapheme joiner).
const INVISIBLE = /[\p{C}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
const SPACE = /\s/u;

/** Scripts a look-alike would be drawn from; a letter of any other script counts as its own "other". */
const SCRIPTS = [
  "Latin",
  "Cyrillic",
  "Greek",
  "Armenian",
  "Georgian",
  "Cherokee",
  "Hebrew",
  "Arabic",
  "Syriac",
  "Thaana",
  "Devanagari",
  "Bengali",
  "Gurmukhi",
  "Gujarati",
  "Tamil",
  "Telugu",
  "Kannada",
  "Malayalam",
  "Sinhala",
  "Thai",
  "Lao",
  "Tibetan",
  "Myanmar",
  "Khmer",
  "Mongolian",
  "Ethiopic",
  "Han",
  "Hiragana",
  "Katakana",
  "Hangul",
  "Bopomofo",
  "Coptic",
  "Runic",
  "Ogham",
  "Canadian_Aboriginal",
].map((name) => [name, new RegExp(`\\p{Script=${name}}`, "u")] as const);
const NEUTRAL = /[\p{Script=Common}\p{Script=Inherited}]/u;

/** Unicode's "highly restrictive" combinations (UTS #39): one script, or Latin with the scripts of CJK writing. */
const ALLOWED_MIXES = [
  ["Latin", "Han", "Hiragana", "Katakana"],
  ["Latin", "Han", "Bopomofo"],
  ["Latin", "Han", "Hangul"],
];

/** Cyrillic and Greek letters drawn like Latin ones (as written, so "Вова" passes and "рос" does not). */
const LATIN_LOOKALIKES = new Set([..."аеорсухіјѕԁһӏԛԝҽӑАВЕКМНОРСТУХІЈЅԌԚԜ", ..."αοικνρτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"]);

function scriptOf(ch: string): string | null {
  if (NEUTRAL.test(ch)) return null;
  for (const [name, re] of SCRIPTS) if (re.test(ch)) return name;
  return "other";
}

/** Why `name` (normalised) may not be chosen as a username, or null when it may. */
export function usernameProblem(name: string): string | null {
  if (!name) return USERNAME_MSG.empty;
  if ([...name].length > USERNAME_MAX_LENGTH) return USERNAME_MSG.long;
  if (INVISIBLE.test(name)) return USERNAME_MSG.invisible;
  if (SPACE.test(name)) return USERNAME_MSG.space;
  const scripts = new Set<string>();
  for (const ch of name) {
    const s = scriptOf(ch);
    if (s) scripts.add(s);
  }
  if (scripts.size > 1 && !ALLOWED_MIXES.some((mix) => [...scripts].every((s) => mix.includes(s))))
    return USERNAME_MSG.mixed;
  if (
    scripts.size === 1
    && (scripts.has("Cyrillic") || scripts.has("Greek"))
    && [...name].every((ch) => !scriptOf(ch) || LATIN_LOOKALIKES.has(ch))
  )
    return USERNAME_MSG.lookalike;
  return null;
}

/** The name to store for one being chosen (registration, an admin's create or rename, a rename of one's own),
 * or a 400 naming the field. */
export function chosenUsername(raw: string | null | undefined): string {
  const name = normaliseUsername(raw);
  const problem = usernameProblem(name);
  if (problem) throw badRequest(problem);
  return name;
}

/**
 * Rows whose name has `name`'s key (deleted ones included; oldest first). ASCII names are one index lookup
 * on lower(username); other names are narrowed by a pattern in which every non-ASCII character matches any
 * one character (a database's lower() may not fold them as JavaScript does), then compared here.
 */
export async function usersNamed(deps: AppDeps, name: string): Promise<User[]> {
  const key = usernameKey(name);
  if (!key) return [];
  const ascii = /^[\x20-\x7e]*$/.test(key);
  const select = (predicate: RawBuilder<boolean>) =>
    deps.db.selectFrom("users").selectAll().where(predicate).orderBy("id").execute();
  let rows: User[];
  if (ascii && dialectOf(deps.db) === "mysql") {
    // The column's collation compares without case in one-api/new-api databases and ours (its unique index then
    // is the case-insensitive one); a binary collation someone chose is read the slow way.
    rows = await select(sql<boolean>`username = ${key}`);
    if (rows.length === 0) rows = await select(sql<boolean>`lower(username) = ${key}`);
  } else if (ascii) {
    rows = await select(sql<boolean>`lower(username) = ${key}`);
  } else {
    const pattern = [...key].map((ch) => (ch > "\x7e" ? "_" : ch.replace(/[!%_]/g, "!$&"))).join("");
    rows = await select(sql<boolean>`lower(username) like ${pattern} escape '!'`);
  }
  return rows.filter((u) => usernameKey(u.username) === key);
}

export async function usernameTaken(deps: AppDeps, name: string, exceptId = 0): Promise<boolean> {
  return (await usersNamed(deps, name)).some((u) => u.id !== exceptId);
}

/** The live account a sign-in name means: the exact spelling when one exists (databases imported with names
 * that differ only in case), else the oldest with the same key. */
export async function userBySignInName(deps: AppDeps, name: string): Promise<User | undefined> {
  const live = (await usersNamed(deps, name)).filter((u) => !u.deleted_at);
  return live.find((u) => u.username === name) ?? live[0];
}

/** Runs a write that sets `name`; a unique index refusing it (another request took the name meanwhile) is
 * answered as the name being taken rather than as a failure of the server. */
export async function claimingName<T>(
  deps: AppDeps,
  name: string,
  exceptId: number,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (e) {
    if (await usernameTaken(deps, name, exceptId)) throw badRequest(USERNAME_MSG.taken);
    throw e;
  }
}
