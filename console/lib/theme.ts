// Dark/light theme (spec 000 §2.2): stored under theme-mode, applied through Arco's body attribute.
import { KEYS, readString, writeString } from "./storage.ts";

export type ThemeMode = "light" | "dark";

export const storedTheme = (): ThemeMode => (readString(KEYS.themeMode) === "dark" ? "dark" : "light");

export function applyTheme(mode: ThemeMode): void {
  writeString(KEYS.themeMode, mode);
  if (mode === "dark") document.body.setAttribute("arco-theme", "dark");
  else document.body.removeAttribute("arco-theme");
}
