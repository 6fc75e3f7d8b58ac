// db/copy.ts: the write-behind's log rows as PostgreSQL COPY text. Each field must read back as the value it
// was (COPY's text format gives backslash, tab, newline and carriage return a meaning), and a value it has no
// text for makes the statement go as its INSERT instead.
import { expect, test } from "bun:test";
import { copyField, copyRows, copyStatement } from "../../db/copy.ts";

test("fields: strings escaped only where COPY reads a character specially, numbers, null and booleans as PostgreSQL reads them", () => {
  expect(copyField("plain 日本語 🙂 ' \" %s $1 ?")).toBe("plain 日本語 🙂 ' \" %s $1 ?");
  expect(copyField("a\tb\nc\rd\\e")).toBe("a\\tb\\nc\\rd\\\\e");
  // A string that looks like COPY's null or its end marker is text, not null and not the end.
  expect(copyField("\\N")).toBe("\\\\N");
  expect(copyField("\\.")).toBe("\\\\.");
  expect(copyField("")).toBe("");
  expect(copyField(null)).toBe("\\N");
  expect(copyField(true)).toBe("t");
  expect(copyField(false)).toBe("f");
  expect(copyField(-42)).toBe("-42");
  expect(copyField(1.5)).toBe("1.5");
  expect(copyField(9007199254740991)).toBe("9007199254740991");
  expect(copyField(12345678901234567890n)).toBe("12345678901234567890");
  // No text here for these: the statement goes as its INSERT.
  expect(copyField(new Uint8Array([1]))).toBeUndefined();
  expect(copyField(new Date(0))).toBeUndefined();
  expect(copyField(undefined)).toBeUndefined();
});

test("rows: a line each, fields tab-separated; undefined when any value has no COPY text", () => {
  expect(copyRows([1, "a\tb", null, 2, "", true], 3)).toBe("1\ta\\tb\t\\N\n2\t\tt\n");
  expect(copyRows([], 3)).toBe("");
  expect(copyRows([1, new Uint8Array([1]), 2, "x"], 2)).toBeUndefined();
  expect(copyStatement("logs", ["user_id", "group"])).toBe('copy "logs" ("user_id", "group") from stdin');
});
