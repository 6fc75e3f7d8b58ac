// new-api's fetch_setting.* keys through PUT /api/option/: accepted in new-api's shapes (switches as
// "true"/"false", lists as JSON arrays of strings), validated with a message naming the problem, stored,
// and applied by the outbound guard at once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testContext, type Session, type TestContext } from "../helpers/app.ts";
import { fetchPolicy, checkUrl } from "../../server/infra/outbound.ts";
import { ROLE } from "../../server/catalogue/index.ts";

let ctx: TestContext;
let root: Session;
beforeAll(async () => {
  ctx = await testContext();
  root = await ctx.user(ROLE.root);
});
afterAll(() => ctx.close());

const put = (key: string, value: unknown) => ctx.request("PUT", "/api/option/", { as: root, body: { key, value } });
const stored = async (key: string) =>
  (await ctx.deps.db.selectFrom("options").select("value").where("key", "=", key).executeTakeFirst())?.value;

describe("fetch_setting.* options", () => {
  test("all eight keys are listed with new-api's defaults", async () => {
    const r = await ctx.request("GET", "/api/option/", { as: root });
    const map = Object.fromEntries(r.body.data.map((o: { key: string; value: string }) => [o.key, o.value]));
    expect(map).toMatchObject({
      "fetch_setting.enable_ssrf_protection": "true",
      "fetch_setting.allow_private_ip": "false",
      "fetch_setting.domain_filter_mode": "false",
      "fetch_setting.domain_list": "[]",
      "fetch_setting.ip_filter_mode": "false",
      "fetch_setting.ip_list": "[]",
      "fetch_setting.allowed_ports": '["80","443","8080","8443"]',
      "fetch_setting.apply_ip_filter_for_domain": "true",
    });
  });

  test("bad values are refused naming the problem, and change nothing", async () => {
    const cases: [string, unknown, string][] = [
      ["fetch_setting.allow_private_ip", "yes", 'fetch_setting.allow_private_ip must be "true" or "false"'],
      ["fetch_setting.enable_ssrf_protection", "1", 'fetch_setting.enable_ssrf_protection must be "true" or "false"'],
      [
        "fetch_setting.allowed_ports",
        "80,443",
        'fetch_setting.allowed_ports must be a JSON array, e.g. ["example.com"]',
      ],
      [
        "fetch_setting.allowed_ports",
        '["80","70000"]',
        'fetch_setting.allowed_ports: "70000" is not a port (1-65535) or a range like 8000-9000',
      ],
      [
        "fetch_setting.allowed_ports",
        '["9000-8000"]',
        'fetch_setting.allowed_ports: "9000-8000" is not a port (1-65535) or a range like 8000-9000',
      ],
      ["fetch_setting.domain_list", '{"a":1}', 'fetch_setting.domain_list must be a JSON array, e.g. ["example.com"]'],
      [
        "fetch_setting.domain_list",
        '["good.example","bad domain"]',
        'fetch_setting.domain_list: "bad domain" is not a domain or a pattern like *.example.com',
      ],
      ["fetch_setting.domain_list", '[["nested"]]', "fetch_setting.domain_list: every entry must be a string"],
      [
        "fetch_setting.ip_list",
        '["10.0.0.0/33"]',
        'fetch_setting.ip_list: "10.0.0.0/33" is not an IP address or a CIDR range',
      ],
      [
        "fetch_setting.ip_list",
        '["example.com"]',
        'fetch_setting.ip_list: "example.com" is not an IP address or a CIDR range',
      ],
    ];
    for (const [key, value, message] of cases) {
      const before = await stored(key);
      const r = await put(key, value);
      expect([r.status, r.body.success, r.body.message]).toEqual([400, false, message]);
      expect(await stored(key)).toBe(before);
    }
  });

  test("good values are stored in new-api's shape (JSON arrays of strings; domains in lower case)", async () => {
    expect((await put("fetch_setting.allowed_ports", '[80, "443", " 9000-9100 "]')).body.success).toBe(true);
    expect(await stored("fetch_setting.allowed_ports")).toBe('["80","443","9000-9100"]');
    expect((await put("fetch_setting.domain_list", '["CDN.Example.com", "*.img.example"]')).body.success).toBe(true);
    expect(await stored("fetch_setting.domain_list")).toBe('["cdn.example.com","*.img.example"]');
    expect((await put("fetch_setting.ip_list", '["10.0.0.0/8", "2001:db8::1"]')).body.success).toBe(true);
    expect((await put("fetch_setting.ip_list", "")).body.success).toBe(true);
    expect(await stored("fetch_setting.ip_list")).toBe("[]");
    expect((await put("fetch_setting.allow_private_ip", true)).body.success).toBe(true);
    expect(await stored("fetch_setting.allow_private_ip")).toBe("true");
  });

  test("a saved value is applied by the next fetch", async () => {
    await put("fetch_setting.allowed_ports", "[]");
    await put("fetch_setting.allow_private_ip", "false");
    await expect(checkUrl(new URL("http://127.0.0.1:9/x"), fetchPolicy(ctx.deps.options))).rejects.toThrow(
      "private or local",
    );
    await put("fetch_setting.allow_private_ip", "true");
    expect(await checkUrl(new URL("http://127.0.0.1:9/x"), fetchPolicy(ctx.deps.options))).toEqual({ address: null });
    await put("fetch_setting.domain_filter_mode", "true");
    await put("fetch_setting.domain_list", '["*.img.example"]');
    await expect(checkUrl(new URL("http://other.example/x"), fetchPolicy(ctx.deps.options))).rejects.toThrow(
      "not on the domain whitelist",
    );
  });
});
