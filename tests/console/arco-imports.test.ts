// The build's per-component Arco imports (scripts/arco-imports.ts): barrel imports become one module per
// component or icon, types are erased, and the stylesheet holds only what the used components need.
import { describe, expect, test } from "bun:test";
import { arcoComponents, arcoStylesheet, rewriteArcoImports, usedComponents } from "../../scripts/arco-imports.ts";

const components = arcoComponents();

describe("rewriteArcoImports", () => {
  test("every component of Arco's barrel is known, by its folder", () => {
    expect(components.get("Button")).toBe("Button");
    expect(components.get("DatePicker")).toBe("DatePicker");
    expect(components.size).toBeGreaterThan(60);
  });

  test("named imports (one line or many, with aliases) become one default import per component", () => {
    const src = `import React from "react";
import {
  Button, Table as ArcoTable,
  Tag, type TableColumnProps,
} from "@arco-design/web-react";
const x = 1;`;
    const out = rewriteArcoImports(src, components);
    expect(out).toContain(`import Button from "@arco-design/web-react/es/Button/index.js";`);
    expect(out).toContain(`import ArcoTable from "@arco-design/web-react/es/Table/index.js";`);
    expect(out).toContain(`import Tag from "@arco-design/web-react/es/Tag/index.js";`);
    expect(out).not.toContain("TableColumnProps");
    expect(out).not.toMatch(/from "@arco-design\/web-react";/);
    expect(out).toContain(`import React from "react";`);
    expect(out).toContain("const x = 1;");
  });

  test("type-only imports vanish; icons come one file each; other files are untouched", () => {
    expect(rewriteArcoImports(`import type { ButtonProps } from "@arco-design/web-react";\nlet a;`, components)).toBe(
      "\nlet a;",
    );
    expect(rewriteArcoImports(`import { IconApps, IconSunFill } from "@arco-design/web-react/icon";`, components)).toBe(
      `import IconApps from "@arco-design/web-react/icon/react-icon/IconApps/index.js";\nimport IconSunFill from "@arco-design/web-react/icon/react-icon/IconSunFill/index.js";`,
    );
    const plain = `import { useState } from "react";`;
    expect(rewriteArcoImports(plain, components)).toBe(plain);
  });
});

describe("the stylesheet", () => {
  test("holds the base sheet and each used component with the components it uses, once, base first", () => {
    const css = arcoStylesheet(["Table", "Button"]);
    const base = css.indexOf("--red-6");
    expect(base).toBeGreaterThanOrEqual(0);
    expect(css.indexOf(".arco-btn")).toBeGreaterThan(base);
    // Table's pagination and checkbox come with it; a component nobody uses does not.
    expect(css).toContain(".arco-pagination");
    expect(css).toContain(".arco-checkbox");
    expect(css).not.toContain(".arco-color-picker");
    expect(css.split("--red-6:").length).toBe(arcoStylesheet(["Button"]).split("--red-6:").length);
  });

  test("the console uses a good part of Arco, not all of it", () => {
    const used = usedComponents(new URL("../../console", import.meta.url).pathname, components);
    expect(used).toContain("Table");
    expect(used).toContain("Menu");
    expect(used).not.toContain("ColorPicker");
    expect(used.length).toBeLessThan(components.size);
  });
});
