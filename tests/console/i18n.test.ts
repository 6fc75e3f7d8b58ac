import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import zh from "../../console/i18n/zh.ts";
import en from "../../console/i18n/en.ts";
import ru from "../../console/i18n/ru.ts";
import { detectLanguage, i18n } from "../../console/i18n/index.ts";

const ROOT = new URL("../../console/", import.meta.url).pathname;

/** Every key the shell, sign-in, personal, user and settings screens use, read from the source. */
async function usedKeys(): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const file of new Glob("**/*.{ts,tsx}").scan(ROOT)) {
    const src = await Bun.file(ROOT + file).text();
    for (const m of src.matchAll(/\bt\("([^"]+)"/g)) keys.add(m[1]);
    // Validation functions return keys that a screen passes to t() later.
    for (const m of src.matchAll(
      /"((?:about|auth|common|error|footer|home|login|models|nav|notFound|oauth|operation|other|personal|pricing|ratelimit|register|reset|role|save|settings|setup|side|system|users)\.[A-Za-z0-9]+)"/g,
    ))
      keys.add(m[1]);
  }
  return new Set([...keys].filter((k) => !k.startsWith("ops.")));
}

describe("translations", () => {
  test("zh, en and ru have exactly the same keys, none empty", () => {
    const ek = Object.keys(en).sort();
    expect(Object.keys(zh).sort()).toEqual(ek);
    expect(Object.keys(ru).sort()).toEqual(ek);
    for (const dict of [zh, en, ru])
      for (const [k, v] of Object.entries(dict)) expect(v.trim().length, k).toBeGreaterThan(0);
  });

  test("every key used by the console has a translation", async () => {
    const keys = await usedKeys();
    expect(keys.size).toBeGreaterThan(400);
    const missing = [...keys].filter((k) => !(k in en));
    expect(missing).toEqual([]);
  });

  test("interpolation placeholders match across languages", () => {
    const vars = (s: string) =>
      [...s.matchAll(/\{\{(\w+)\}\}/g)]
        .map((m) => m[1])
        .sort()
        .join(",");
    for (const k of Object.keys(en)) {
      expect(vars(zh[k]), `zh ${k}`).toBe(vars(en[k]));
      expect(vars(ru[k]), `ru ${k}`).toBe(vars(en[k]));
    }
  });

  test("the Russian and Chinese texts are actually translated", () => {
    expect(ru["login.required"]).toBe("Введите имя пользователя и пароль");
    expect(zh["login.required"]).toBe("请输入用户名和密码");
    const same = Object.keys(en).filter(
      (k) =>
        ru[k] === en[k]
        && !/^(auth\.with|models\.(claude|gemini)$|system\.(oidc|smtp|github|linuxdo|clientId|clientSecret|turnstileSection|wellKnown)$)/.test(
          k,
        ),
    );
    expect(same.length).toBeLessThan(15);
  });
});

describe("language choice", () => {
  test("stored choice wins; ru browser → Russian; en browser → English; otherwise Chinese", () => {
    expect(detectLanguage("en", "ru-RU")).toBe("en");
    expect(detectLanguage(null, "ru-RU")).toBe("ru");
    expect(detectLanguage(null, "en-US")).toBe("en");
    expect(detectLanguage(null, "de-DE")).toBe("zh");
    expect(detectLanguage("fr", "")).toBe("zh");
  });

  test("Chinese is the fallback for a key a language lacks", async () => {
    i18n.addResource("zh", "translation", "only.zh.key", "仅中文");
    await i18n.changeLanguage("ru");
    expect(i18n.t("only.zh.key")).toBe("仅中文");
    await i18n.changeLanguage("en");
  });
});
