// Renders an admin-written text: a URL is embedded in an iframe, HTML is shown as written (only
// admins can set it), anything else goes through the escaping Markdown renderer.
import { contentKind, renderMarkdown } from "../lib/markdown.ts";

export function RichContent({ content, title }: { content: string; title: string }) {
  const kind = contentKind(content);
  if (kind === "empty") return null;
  if (kind === "url")
    return <iframe src={content.trim()} title={title} style={{ width: "100%", height: "80vh", border: "none" }} />;
  const html = kind === "html" ? content : renderMarkdown(content);
  return <div className="sy-markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}
