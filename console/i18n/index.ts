// i18next set-up: Chinese is the fallback, English and Russian are complete translations (tests keep the
// three key sets equal). The language is remembered under i18nextLng; on a first visit Russian is chosen
// for a ru browser, English for an en browser, Chinese otherwise. Operations screens keep their
// strings in ops.*.ts, merged here.
//
// Only the language in use is downloaded: each language (its texts and Arco's own component texts) is a
// chunk of its own, loaded before the first render (top-level await) and on a switch of language.
import i18next from "i18next";
import { initReactI18next } from "react-i18next";
import { KEYS, readString, writeString } from "../lib/storage.ts";

export const LANGUAGES = ["zh", "en", "ru"] as const;
export type Language = (typeof LANGUAGES)[number];

export function detectLanguage(
  stored = readString(KEYS.language),
  browser = globalThis.navigator?.language ?? "",
): Language {
  const s = (stored ?? "").slice(0, 2).toLowerCase();
  if ((LANGUAGES as readonly string[]).includes(s)) return s as Language;
  const b = browser.toLowerCase();
  if (b.startsWith("ru")) return "ru";
  if (b.startsWith("en")) return "en";
  return "zh";
}

type Bundle = { texts: Record<string, string>; arco: unknown };
const LOADERS: Record<Language, () => Promise<Bundle>> = {
  zh: () =>
    Promise.all([import("./zh.ts"), import("./ops.zh.ts"), import("@arco-design/web-react/es/locale/zh-CN")]).then(
      ([a, b, c]) => ({ texts: { ...a.default, ...b.default }, arco: c.default }),
    ),
  en: () =>
    Promise.all([import("./en.ts"), import("./ops.en.ts"), import("@arco-design/web-react/es/locale/en-US")]).then(
      ([a, b, c]) => ({ texts: { ...a.default, ...b.default }, arco: c.default }),
    ),
  ru: () =>
    Promise.all([import("./ru.ts"), import("./ops.ru.ts"), import("@arco-design/web-react/es/locale/ru-RU")]).then(
      ([a, b, c]) => ({ texts: { ...a.default, ...b.default }, arco: c.default }),
    ),
};
const arcoLocales: Partial<Record<Language, unknown>> = {};

/** Downloads a language's texts once; later calls resolve at once. */
export async function loadLanguage(lang: Language): Promise<void> {
  if (arcoLocales[lang]) return;
  const { texts, arco } = await LOADERS[lang]();
  i18n.addResourceBundle(lang, "translation", texts, true, false);
  arcoLocales[lang] = arco;
}

/** Arco's component texts (OK/Cancel, pagination, date pickers) for a loaded language; Chinese's otherwise. */
export function arcoLocale(lang: string): any {
  const l = lang.slice(0, 2) as Language;
  return arcoLocales[l] ?? Object.values(arcoLocales)[0];
}

const initial = detectLanguage();
export const i18n = i18next.createInstance();
i18n.use(initReactI18next).init({
  resources: {},
  lng: initial,
  fallbackLng: "zh",
  // Keys are flat strings like "login.title" and server messages may contain ":" or ".".
  keySeparator: false,
  nsSeparator: false,
  interpolation: { escapeValue: false },
  initAsync: false,
  returnNull: false,
} as any);

// Screen readers and the browser's own UI (spell check, hyphenation) follow the document language.
i18n.on("languageChanged", (lng) => {
  if (globalThis.document) document.documentElement.lang = lng;
});
if (globalThis.document) document.documentElement.lang = i18n.language;

await loadLanguage(initial);
// Re-applied now that its texts are there, so components bound before the load re-render.
await i18n.changeLanguage(initial);

export async function changeLanguage(lang: Language): Promise<unknown> {
  writeString(KEYS.language, lang);
  await loadLanguage(lang);
  return i18n.changeLanguage(lang);
}

export const t = (key: string, opts?: Record<string, unknown>) => i18n.t(key, opts as any) as string;
