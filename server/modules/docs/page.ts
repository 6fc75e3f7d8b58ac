// GET /api/docs: a small page that reads /api/openapi.json and lists the operations by tag, with their role,
// parameters, request body and reply schemas. Everything is inline: it works with no network but this server.
export const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchyard management API</title>
<style>
  :root { color-scheme: light dark; --line: #8884; --muted: #888; }
  body { margin: 0; font: 14px/1.5 system-ui, sans-serif; display: flex; }
  nav { width: 240px; flex: none; height: 100vh; overflow: auto; position: sticky; top: 0; border-right: 1px solid var(--line); padding: 12px; box-sizing: border-box; }
  nav a { display: block; color: inherit; text-decoration: none; padding: 2px 4px; border-radius: 4px; }
  nav a:hover { background: var(--line); }
  main { flex: 1; padding: 16px 24px; max-width: 1100px; min-width: 0; }
  h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 4px; border-bottom: 1px solid var(--line); }
  .intro { white-space: pre-wrap; color: var(--muted); }
  details { border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; }
  summary { cursor: pointer; padding: 6px 10px; display: flex; gap: 10px; align-items: baseline; }
  .m { font: bold 12px monospace; width: 56px; text-align: center; border-radius: 4px; padding: 1px 0; color: #fff; flex: none; }
  .get { background: #2f7d32; } .post { background: #1565c0; } .put { background: #b26a00; } .delete { background: #c62828; } .patch { background: #6a1b9a; }
  .p { font-family: monospace; } .role { margin-left: auto; font-size: 12px; color: var(--muted); }
  .body { padding: 4px 12px 10px; } .body h4 { margin: 10px 0 2px; font-size: 13px; }
  pre { background: #8881; padding: 8px; border-radius: 4px; overflow: auto; max-height: 420px; margin: 0; font-size: 12px; }
  table { border-collapse: collapse; } td, th { border: 1px solid var(--line); padding: 2px 8px; text-align: left; font-size: 13px; }
  details.raw { border: none; margin: 2px 0 0; } details.raw > summary { padding: 0; font-size: 12px; color: var(--muted); }
  #filter { width: 100%; box-sizing: border-box; margin-bottom: 8px; padding: 4px; }
</style>
</head>
<body>
<nav><input id="filter" placeholder="filter: path, tag, role"><div id="toc"></div>
<p><a href="/api/openapi.json">openapi.json</a><a href="/api/docs/scalar">Interactive (Scalar, CDN)</a></p></nav>
<main><h1 id="title">Switchyard management API</h1><div class="intro" id="intro">Loading /api/openapi.json ...</div><div id="ops"></div></main>
<script>
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
// A schema as a short TypeScript-like outline (descriptions as comments), the raw JSON Schema one click away.
let doc = { components: {} };
function outline(s, pad) {
  if (!s || typeof s !== "object") return "any";
  if (s.$ref) {
    const name = s.$ref.split("/").pop(), target = ((doc.components || {}).schemas || {})[name];
    return target && !target.$ref ? name + " " + outline(target, pad) : name;
  }
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.anyOf || s.oneOf) return (s.anyOf || s.oneOf).map((x) => outline(x, pad)).join(" | ");
  if (Array.isArray(s.type)) return s.type.join(" | ");
  if (s.type === "array") return outline(s.items, pad) + "[]";
  if (s.type === "object" || s.properties) {
    const props = Object.entries(s.properties || {});
    if (!props.length) return s.additionalProperties === false ? "{}" : "object";
    const inner = pad + "  ", req = new Set(s.required || []);
    let out = "{\\n";
    for (const [k, v] of props) {
      const note = v && v.description ? "  // " + v.description : "";
      out += inner + k + (req.has(k) ? "" : "?") + ": " + outline(v, inner) + note + "\\n";
    }
    if (s.additionalProperties !== false) out += inner + "...\\n";
    return out + pad + "}";
  }
  return (s.type || "any") + (s.format ? " (" + s.format + ")" : "");
}
const pretty = (v) => "<pre>" + esc(outline(v, "")) + "</pre><details class=\\"raw\\"><summary>JSON Schema</summary><pre>" + esc(JSON.stringify(v, null, 2)) + "</pre></details>";
function render(loaded) {
  doc = loaded;
  document.getElementById("title").textContent = doc.info.title + " " + doc.info.version;
  document.getElementById("intro").textContent = doc.info.description || "";
  const byTag = new Map((doc.tags || []).map((t) => [t.name, { desc: t.description, ops: [] }]));
  for (const [path, item] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(item)) {
    const tag = (op.tags && op.tags[0]) || "other";
    if (!byTag.has(tag)) byTag.set(tag, { desc: "", ops: [] });
    byTag.get(tag).ops.push({ path, method, op });
  }
  let toc = "", out = "";
  for (const [tag, { desc, ops }] of byTag) {
    if (!ops.length) continue;
    toc += '<a href="#tag-' + esc(tag) + '">' + esc(tag) + " (" + ops.length + ")</a>";
    out += '<section data-tag="' + esc(tag) + '"><h2 id="tag-' + esc(tag) + '">' + esc(tag) + "</h2><div>" + esc(desc) + "</div>";
    for (const { path, method, op } of ops) {
      const role = op["x-switchyard-role"] || "";
      let body = '<div class="body"><div>' + esc(op.description).replace(/\\*\\*(.+?)\\*\\*/g, "<b>$1</b>") + "</div>";
      if (op.parameters && op.parameters.length) {
        body += "<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>required</th><th>schema</th></tr>";
        for (const p of op.parameters) body += "<tr><td>" + esc(p.name) + "</td><td>" + esc(p.in) + "</td><td>" + (p.required ? "yes" : "") + "</td><td><code>" + esc(JSON.stringify(p.schema)) + "</code></td></tr>";
        body += "</table>";
      }
      if (op.requestBody) for (const [type, c] of Object.entries(op.requestBody.content || {})) body += "<h4>Request body (" + esc(type) + (op.requestBody.required ? "" : ", optional") + ")</h4>" + pretty(c.schema);
      for (const [status, r] of Object.entries(op.responses || {})) {
        body += "<h4>Reply " + esc(status) + ": " + esc(r.description) + "</h4>";
        for (const c of Object.values(r.content || {})) body += pretty(c.schema);
      }
      out += '<details data-search="' + esc((path + " " + method + " " + tag + " " + role).toLowerCase()) + '"><summary><span class="m ' + esc(method) + '">' + esc(method.toUpperCase()) + '</span><span class="p">' + esc(path) + "</span><span>" + esc(op.summary && op.summary !== path.replace(/^\\/api/, "") ? op.summary : "") + '</span><span class="role">' + esc(role) + "</span></summary>" + body + "</div></details>";
    }
    out += "</section>";
  }
  document.getElementById("toc").innerHTML = toc;
  document.getElementById("ops").innerHTML = out;
}
document.getElementById("filter").addEventListener("input", (e) => {
  const q = e.target.value.trim().toLowerCase();
  for (const d of document.querySelectorAll("details[data-search]")) d.style.display = !q || d.dataset.search.includes(q) ? "" : "none";
});
fetch("/api/openapi.json").then((r) => r.json()).then(render).catch((e) => { document.getElementById("intro").textContent = "Could not load /api/openapi.json: " + e; });
</script>
</body>
</html>`;
