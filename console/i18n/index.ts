// i18next set-up: Chinese is the fallback, English and Russian are complete translations. The language
// is remembered under i18nextLng; on a first visit Russian is chosen for a ru browser, English for an
// en browser, Chinese otherwise. Operations screens (issue 8) keep their strings in ops.*.ts, merged here.
import i18next from "i18next";
import { initReactI18next } from "react-i18next";
import zh from "./zh.ts";
import en from "./en.ts";
import ru from "./ru.ts";
import opsZh from "./ops.zh.ts";
import opsEn from "./ops.en.ts";
import opsRu from "./ops.ru.ts";
import { KEYS, readString, writeString } from "../lib/storage.ts";

export const LANGUAGES = ["zh", "en", "ru"] as const;
export type Language = (typeof LANGUAGES)[number];

export function detectLanguage(stored = readString(KEYS.language), browser = globalThis.navigator?.language ?? ""): Language {
  const s = (stored ?? "").slice(0, 2).toLowerCase();
  if ((LANGUAGES as readonly string[]).includes(s)) return s as Language;
  const b = browser.toLowerCase();
  if (b.startsWith("ru")) return "ru";
  if (b.startsWith("en")) return "en";
  return "zh";
}

export const i18n = i18next.createInstance();
i18n.use(initReactI18next).init({
  resources: {
    zh: { translation: { ...zh, ...opsZh } },
    en: { translation: { ...en, ...opsEn } },
    ru: { translation: { ...ru, ...opsRu } },
  },
  lng: detectLanguage(),
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

export function changeLanguage(lang: Language): Promise<unknown> {
  writeString(KEYS.language, lang);
  return i18n.changeLanguage(lang);
}

export const t = (key: string, opts?: Record<string, unknown>) => i18n.t(key, opts as any) as string;
