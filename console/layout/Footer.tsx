// Footer (spec 000 §2.2): the admin's custom HTML footer when set, else a default credit line. The
// footer may not be stored yet on the first paint, so local storage is polled 5 times at 200 ms.
import { useEffect, useState } from "react";
import { useTranslation } from "react-i18next";
import { useApp } from "../lib/app-state.tsx";
import { KEYS, readString } from "../lib/storage.ts";

export function Footer() {
  const { t } = useTranslation();
  const { status } = useApp();
  const [html, setHtml] = useState(() => readString(KEYS.footerHtml) ?? "");
  useEffect(() => {
    if (status.footer_html !== undefined) {
      setHtml(String(status.footer_html));
      return;
    }
    let tries = 0;
    const timer = setInterval(() => {
      const v = readString(KEYS.footerHtml);
      tries += 1;
      if (v) setHtml(v);
      if (v || tries >= 5) clearInterval(timer);
    }, 200);
    return () => clearInterval(timer);
  }, [status.footer_html]);
  if (html) return <div className="sy-footer custom-footer" dangerouslySetInnerHTML={{ __html: html }} />;
  return (
    <div className="sy-footer">
      {status.system_name || "Switchyard"} {status.version ?? ""} · {t("footer.credit")}
    </div>
  );
}
