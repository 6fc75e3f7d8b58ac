// Arco Design imported per component, as Arco's own "import on demand" guide does with babel-plugin-import:
// the console's sources keep writing `import { Button, Table } from "@arco-design/web-react"`, and the
// build rewrites each such import into one module per component. The stylesheet holds only the styles
// of the components used (es/<Name>/style/css.js, which names the base sheet and the styles of the
// components it uses) instead of the whole 547 KiB arco.css. Icons go the same way (one module per icon
// instead of the 500-icon barrel).
import type { BunPlugin } from "bun";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const ARCO = join(resolve(import.meta.dir, ".."), "node_modules", "@arco-design", "web-react");

/** Export name → folder, read from Arco's own barrel (es/index.js: `export { default as Button } from './Button'`). */
export function arcoComponents(indexSource = readFileSync(join(ARCO, "es", "index.js"), "utf8")): Map<string, string> {
  const map = new Map<string, string>();
  for (const m of indexSource.matchAll(/export\s*\{\s*default\s+as\s+(\w+)\s*\}\s*from\s*['"]\.\/([\w-]+)['"]/g))
    map.set(m[1], m[2]);
  return map;
}

const IMPORT_RE = /import\s+(type\s+)?\{([^}]*)\}\s*from\s*["']@arco-design\/web-react(\/icon)?["'];?/g;

/**
 * Rewrites the barrel imports of one source file. Specifiers that are not components (types such as
 * TableColumnProps) are erased, as TypeScript would erase them; a whole `import type {…}` goes away.
 */
export function rewriteArcoImports(source: string, components: Map<string, string>): string {
  if (!source.includes("@arco-design/web-react")) return source;
  return source.replace(IMPORT_RE, (_all, typeOnly: string | undefined, list: string, icon: string | undefined) => {
    if (typeOnly) return "";
    const out: string[] = [];
    for (const raw of list.split(",")) {
      const spec = raw.trim();
      if (!spec || spec.startsWith("type ")) continue;
      const [name, local = name] = spec.split(/\s+as\s+/).map((s) => s.trim());
      if (icon) {
        out.push(`import ${local} from "@arco-design/web-react/icon/react-icon/${name}/index.js";`);
        continue;
      }
      const dir = components.get(name);
      if (!dir) continue; // a type: erased
      out.push(`import ${local} from "@arco-design/web-react/es/${dir}/index.js";`);
    }
    return out.join("\n");
  });
}

/** Component folders imported anywhere under `srcDir`. */
export function usedComponents(srcDir: string, components: Map<string, string>): string[] {
  const used = new Set<string>();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
    );
  for (const file of walk(srcDir)) {
    for (const m of readFileSync(file, "utf8").matchAll(IMPORT_RE)) {
      if (m[1] || m[3]) continue;
      for (const spec of m[2].split(",")) {
        const dir = components.get(spec.trim().split(/\s+as\s+/)[0]);
        if (dir) used.add(dir);
      }
    }
  }
  return [...used].sort();
}

/**
 * One stylesheet with the base sheet and the styles of the given components and of the components they
 * use, each once, in the order their style/css.js files import them (base and dependencies first).
 */
export function arcoStylesheet(dirs: string[]): string {
  const seen = new Set<string>();
  const parts: string[] = [];
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    if (file.endsWith(".css")) {
      parts.push(readFileSync(file, "utf8"));
      return;
    }
    for (const m of readFileSync(file, "utf8").matchAll(/import\s+['"]([^'"]+)['"]/g))
      visit(resolve(dirname(file), m[1]));
  };
  for (const dir of dirs) visit(join(ARCO, "es", dir, "style", "css.js"));
  return parts.join("\n");
}

const ARCO_SHEET = /^@arco-design\/web-react\/dist\/css\/arco\.css$/;

/**
 * The Bun.build plugin: applies rewriteArcoImports to the console's own TypeScript files, and answers
 * the one `import "@arco-design/web-react/dist/css/arco.css"` (main.tsx) with arcoStylesheet of the
 * components the console uses. Every style is thus in the entry's stylesheet: Bun does not load the CSS
 * of a lazily imported chunk, so styles imported per chunk would never reach the page.
 */
export function arcoImportsPlugin(srcDir: string): BunPlugin {
  const components = arcoComponents();
  const escaped = srcDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return {
    name: "arco-per-component",
    setup(build) {
      build.onLoad({ filter: new RegExp(`^${escaped}[\\\\/].*\\.tsx?$`) }, async ({ path }) => ({
        contents: rewriteArcoImports(await Bun.file(path).text(), components),
        loader: path.endsWith(".tsx") ? "tsx" : "ts",
      }));
      build.onResolve({ filter: ARCO_SHEET }, () => ({ path: "arco-used.css", namespace: "arco-styles" }));
      build.onLoad({ filter: /.*/, namespace: "arco-styles" }, () => ({
        contents: arcoStylesheet(usedComponents(srcDir, components)),
        loader: "css",
      }));
    },
  };
}
