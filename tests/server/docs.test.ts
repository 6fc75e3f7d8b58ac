// The documentation keeps its promises: every environment variable server/config.ts reads is documented in
// docs/configuration.md, every relative link in README.md and docs/**/*.md reaches a file and, for a
// `#anchor`, a heading of that file, and the index (docs/README.md) links every page.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { HELP } from "../../server/config.ts";

const ROOT = resolve(import.meta.dir, "../..");

/** Names read as env.NAME, env?.NAME or env["NAME"] (loadConfig's `env` is process.env or a test's object). */
function envNamesRead(source: string): string[] {
  const names = new Set<string>();
  for (const m of source.matchAll(
    /\benv(?:\?\.|\.)([A-Za-z_][A-Za-z0-9_]*)|\benv\??\.?\[\s*["'`]([A-Za-z_][A-Za-z0-9_]*)["'`]\s*\]/g,
  )) {
    names.add(m[1] ?? m[2]!);
  }
  return [...names].sort();
}

/** GitHub's anchor for a heading: inline markup dropped, lower case, punctuation removed, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a Markdown file's headings (outside code fences), with GitHub's -1, -2 for repeats. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseLines(markdown, true)) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Lines outside fenced code blocks, with inline code spans blanked unless asked for (a link in code is not a link). */
function proseLines(markdown: string, keepCode = false): string[] {
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of markdown.split("\n")) {
    const f = /^\s*(```+|~~~+)/.exec(line);
    if (f) {
      if (fence === null) fence = f[1]![0]!;
      else if (f[1]![0] === fence) fence = null;
      continue;
    }
    if (fence === null) out.push(keepCode ? line : line.replace(/`[^`]*`/g, (s) => " ".repeat(s.length)));
  }
  return out;
}

/** Every relative link target of a Markdown text ([text](target) and ![alt](target)); web and mail links left out. */
function relativeLinks(markdown: string): string[] {
  const out: string[] = [];
  for (const line of proseLines(markdown)) {
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      out.push(target);
    }
  }
  return out;
}

/** What is wrong with one file's relative links: missing files and missing headings. */
function brokenLinks(file: string, markdown: string, read: (path: string) => string | null): string[] {
  const problems: string[] = [];
  for (const target of relativeLinks(markdown)) {
    const [path, anchor] = target.split("#", 2) as [string, string | undefined];
    const resolved = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
    const text = read(resolved);
    if (text === null) {
      problems.push(`${target}: no such file`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith(".md") && !anchors(text).has(decodeURIComponent(anchor))) {
      problems.push(`${target}: no heading #${anchor} in ${path || "this file"}`);
    }
  }
  return problems;
}

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith(".md") ? [path] : [];
  });
}

const readIfThere = (path: string): string | null => {
  if (!existsSync(path)) return null;
  return statSync(path).isDirectory() ? "" : readFileSync(path, "utf8");
};

describe("docs/configuration.md", () => {
  const config = readFileSync(join(ROOT, "server/config.ts"), "utf8");
  const documented = readFileSync(join(ROOT, "docs/configuration.md"), "utf8");

  test("names every environment variable server/config.ts reads", () => {
    const read = envNamesRead(config);
    // The reader itself must see the variables, or the check below would pass on nothing.
    expect(read).toContain("SQL_DSN");
    expect(read).toContain("OTEL_EXPORTER_OTLP_ENDPOINT");
    const missing = read.filter((name) => !documented.includes("`" + name + "`"));
    expect(missing).toEqual([]);
  });

  test("--help shows every flag of the command-line table and sends the reader here for the environment", () => {
    const table = documented.slice(
      documented.indexOf("## Command-line flags"),
      documented.indexOf("## Environment variables"),
    );
    const flags = [...new Set([...table.matchAll(/`(--[a-z-]+)/g)].map((m) => m[1]!))];
    expect(flags).toContain("--healthcheck");
    expect(flags.filter((flag) => !HELP.includes(flag))).toEqual([]);
    expect(HELP).toContain("docs/configuration.md");
  });

  test("the reader finds every way config.ts reads a variable", () => {
    expect(
      envNamesRead(`a(env.PORT); env?.HOST; env["DATA_DIR"]; env['TZ']; process.env.NODE_ENV; environment.X`),
    ).toEqual(["DATA_DIR", "HOST", "NODE_ENV", "PORT", "TZ"]);
  });
});

describe("relative links in README.md and docs/", () => {
  const files = [join(ROOT, "README.md"), ...markdownFiles(join(ROOT, "docs"))];

  test.each(files.map((f) => [relative(ROOT, f), f]))("%s: every relative link resolves", (_name, file) => {
    expect(brokenLinks(file, readFileSync(file, "utf8"), readIfThere)).toEqual([]);
  });

  test("docs/README.md, the index, links every page of docs/", () => {
    const index = join(ROOT, "docs/README.md");
    const linked = new Set(
      relativeLinks(readFileSync(index, "utf8")).map((l) => resolve(dirname(index), l.split("#")[0]!)),
    );
    const pages = markdownFiles(join(ROOT, "docs")).filter((f) => f !== index);
    expect(pages.filter((f) => !linked.has(f)).map((f) => relative(ROOT, f))).toEqual([]);
  });

  test("a link to a missing file or heading is reported; web links, code and existing targets are not", () => {
    const docs: Record<string, string> = {
      "/d/a.md": "# Title\n\n## Set-up: `npm ci` & run\n\n## Repeat\n\n## Repeat\n",
      "/d/b.md": [
        "[ok](a.md) [ok](a.md#title) [ok](a.md#set-up-npm-ci--run) [ok](a.md#repeat-1) [ok](#here) [web](https://x.test/y.md)",
        "[gone](c.md) [no heading](a.md#nowhere)",
        "`[in code](c.md)`",
        "```",
        "[in a fence](c.md)",
        "```",
        "## Here",
      ].join("\n"),
    };
    expect(brokenLinks("/d/b.md", docs["/d/b.md"]!, (p) => docs[p] ?? null)).toEqual([
      "c.md: no such file",
      "a.md#nowhere: no heading #nowhere in a.md",
    ]);
  });
});
