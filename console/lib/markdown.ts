// Markdown for the console: the admin's texts (home page, about, notice) and the playground's replies,
// rendered by markdown-it with raw HTML off (a tag in the text is shown as text), GFM tables, code blocks
// highlighted by highlight.js with a copy button, and links and images limited to http(s), mailto and
// relative targets (a link is opened in a new tab without access to this page). An admin's HTML home page
// is not Markdown: RichContent shows it as written, as one-api does.
import MarkdownIt from "markdown-it";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import go from "highlight.js/lib/languages/go";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const LANGUAGES = { bash, c, cpp, css, go, java, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, lang);
hljs.registerAliases(["sh", "shell", "zsh"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["yml"], { languageName: "yaml" });
hljs.registerAliases(["md"], { languageName: "markdown" });
hljs.registerAliases(["golang"], { languageName: "go" });
hljs.registerAliases(["rs"], { languageName: "rust" });

/** True for http(s), mailto and relative targets; any other scheme (javascript:, data:, vbscript:, file:) is refused. */
export function safeUrl(url: string): boolean {
  // Browsers ignore control characters and spaces inside a scheme ("java\tscript:"): so does this check.
  const u = url.replace(/[\u0000-\u0020\u007f-\u009f]/g, "").toLowerCase();
  const scheme = /^([a-z][a-z0-9+.-]*):/.exec(u);
  return !scheme || scheme[1] === "http" || scheme[1] === "https" || scheme[1] === "mailto";
}

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export interface MarkdownOptions {
  /** The label of the copy button on code blocks; none without it. */
  copyLabel?: string;
}

const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });
md.validateLink = safeUrl;

// Links open in a new tab, without a handle on this page.
md.renderer.rules.link_open = (tokens, idx, options, _env, self) => {
  tokens[idx].attrSet("target", "_blank");
  tokens[idx].attrSet("rel", "noopener noreferrer");
  return self.renderToken(tokens, idx, options);
};
// Wide tables scroll inside the message instead of widening it.
md.renderer.rules.table_open = () => '<div class="sy-md-table"><table>\n';
md.renderer.rules.table_close = () => "</table></div>\n";
md.renderer.rules.fence = (tokens, idx, _options, rawEnv) => {
  const env = rawEnv as MarkdownOptions | undefined;
  const token = tokens[idx];
  const lang = token.info.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  const known = lang && hljs.getLanguage(lang);
  const body = known
    ? hljs.highlight(token.content, { language: lang, ignoreIllegals: true }).value
    : escapeHtml(token.content);
  const head = env?.copyLabel
    ? `<div class="sy-code-head"><span>${escapeHtml(lang)}</span><button type="button" class="sy-code-copy" data-copy-code>${escapeHtml(env.copyLabel)}</button></div>`
    : "";
  return `<div class="sy-code">${head}<pre><code class="hljs${known ? ` language-${escapeHtml(lang)}` : ""}">${body}</code></pre></div>\n`;
};

export function renderMarkdown(src: string, opts: MarkdownOptions = {}): string {
  return md.render(src, { ...opts });
}

/** Admin content is HTML when it starts with a tag, a URL to embed when it is one, else Markdown. */
export function contentKind(content: string): "empty" | "url" | "html" | "markdown" {
  const c = content.trim();
  if (!c) return "empty";
  if (/^https?:\/\/\S+$/.test(c)) return "url";
  if (c.startsWith("<")) return "html";
  return "markdown";
}
