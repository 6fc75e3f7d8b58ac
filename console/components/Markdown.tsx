// Markdown rendered into the page (console/lib/markdown.ts: raw HTML off, safe links), with the copy
// buttons of its code blocks working.
import type React from "react";
import { useMemo } from "react";
import { useTranslation } from "react-i18next";
import { copyWithFallback } from "./copy.tsx";
import { renderMarkdown } from "../lib/markdown.ts";

export function Markdown({ text, className, testId }: { text: string; className?: string; testId?: string }) {
  const { t } = useTranslation();
  const html = useMemo(() => renderMarkdown(text, { copyLabel: t("common.copy") }), [text, t]);
  const onClick = (e: React.MouseEvent<HTMLDivElement>) => {
    const button = (e.target as HTMLElement).closest("[data-copy-code]");
    const code = button?.closest(".sy-code")?.querySelector("code");
    if (code) void copyWithFallback(code.textContent ?? "");
  };
  return (
    <div
      className={`sy-markdown${className ? ` ${className}` : ""}`}
      data-testid={testId}
      onClick={onClick}
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}
