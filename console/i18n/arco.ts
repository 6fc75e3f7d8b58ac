// Arco's own component texts (OK/Cancel, pagination, date pickers) follow the console language.
import zhCN from "@arco-design/web-react/es/locale/zh-CN";
import enUS from "@arco-design/web-react/es/locale/en-US";
import ruRU from "@arco-design/web-react/es/locale/ru-RU";

export function arcoLocale(lang: string): any {
  if (lang.startsWith("en")) return enUS;
  if (lang.startsWith("ru")) return ruRU;
  return zhCN;
}
