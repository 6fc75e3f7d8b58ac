// The outbound guard (server/infra/outbound.ts): which addresses a user-supplied URL may reach under the
// fetch_setting.* options, how every spelling of a local address is recognised, and how fetching behaves
// (pinned to the checked address, redirects re-checked hop by hop, size and time bounded).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  checkUrl,
  fetchOutbound,
  fetchPolicy,
  parseCidr,
  parseIp,
  parsePortRanges,
  type FetchPolicy,
  OutboundError,
} from "../../server/infra/outbound.ts";
import { OPTION_DEFAULTS } from "../../server/modules/option/defaults.ts";
import { LOCAL_FETCHES } from "../helpers/outbound.ts";

const policy = (over: Record<string, string> = {}): FetchPolicy => {
  const values: Record<string, string> = { ...OPTION_DEFAULTS, ...over };
  return fetchPolicy({ get: (k) => values[k] ?? "" });
};
/** A resolver without DNS: every name answers these addresses. */
const resolvesTo =
  (...addresses: string[]) =>
  async () =>
    addresses;

async function refusal(url: string, p: FetchPolicy, resolve = resolvesTo("93.184.216.34")): Promise<string> {
  try {
    await checkUrl(new URL(url), p, resolve);
  } catch (e) {
    expect(e).toBeInstanceOf(OutboundError);
    return (e as Error).message;
  }
  return "allowed";
}

describe("the defaults (new-api's): protection on, no private addresses, ports 80, 443, 8080, 8443", () => {
  const p = policy();

  test("the option defaults", () => {
    expect(OPTION_DEFAULTS["fetch_setting.enable_ssrf_protection"]).toBe("true");
    expect(OPTION_DEFAULTS["fetch_setting.allow_private_ip"]).toBe("false");
    expect(JSON.parse(OPTION_DEFAULTS["fetch_setting.allowed_ports"]!)).toEqual(["80", "443", "8080", "8443"]);
    expect(OPTION_DEFAULTS["fetch_setting.apply_ip_filter_for_domain"]).toBe("true");
    expect(p).toMatchObject({
      enabled: true,
      allowPrivate: false,
      domainWhitelist: false,
      ipWhitelist: false,
      ipFilterForDomains: true,
    });
  });

  test("public addresses and names on allowed ports pass", async () => {
    for (const u of [
      "https://example.com/a.png",
      "http://93.184.216.34/x",
      "http://example.com:8080/",
      "https://[2606:4700::1111]/",
    ]) {
      expect(await refusal(u, p)).toBe("allowed");
    }
  });

  test("loopback, private, link-local, CGNAT and reserved IPv4 in every spelling are refused", async () => {
    const urls = [
      "http://127.0.0.1/",
      "http://127.1/",
      "http://2130706433/",
      "http://0x7f000001/",
      "http://0177.0.0.1/",
      "http://0x7f.1/",
      "http://0/",
      "http://0.0.0.0/",
      "http://10.1.2.3/",
      "http://172.16.0.1/",
      "http://192.168.1.1/",
      "http://100.64.0.1/",
      "http://169.254.1.1/",
      "http://224.0.0.1/",
      "http://255.255.255.255/",
      "http://198.18.0.1/",
    ];
    for (const u of urls)
      expect(await refusal(u, p)).toContain("is a private or local address (fetch_setting.allow_private_ip is off)");
  });

  test("IPv6 loopback, unique-local, link-local, multicast and IPv4 wrapped in IPv6 are refused", async () => {
    const urls = [
      "http://[::1]/",
      "http://[::]/",
      "http://[fd12:3456::1]/",
      "http://[fe80::1]/",
      "http://[ff02::1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://[::ffff:7f00:1]/",
      "http://[::ffff:10.0.0.1]/",
      "http://[::127.0.0.1]/",
      "http://[64:ff9b::7f00:1]/",
      "http://[2002:7f00:1::]/",
      "http://[0:0:0:0:0:ffff:192.168.0.1]/",
    ];
    for (const u of urls) expect(await refusal(u, p)).toContain("private or local");
  });

  test("cloud metadata addresses and names are refused, even with allow_private_ip", async () => {
    const open = policy(LOCAL_FETCHES);
    for (const pol of [p, open]) {
      for (const u of [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/",
        "http://169.254.170.2/v2/credentials",
      ]) {
        expect(await refusal(u, pol)).toContain("cloud metadata address");
      }
      expect(await refusal("http://metadata.google.internal/computeMetadata/v1/", pol)).toContain(
        "cloud metadata address",
      );
      expect(await refusal("http://img.example.com/", pol, resolvesTo("169.254.169.254"))).toBe(
        "img.example.com resolves to a cloud metadata address, which is never fetched",
      );
    }
  });

  test("a name is judged by every address it resolves to", async () => {
    expect(await refusal("http://localhost/", p, resolvesTo("127.0.0.1", "::1"))).toBe(
      "localhost resolves to a private or local address (fetch_setting.allow_private_ip is off)",
    );
    expect(await refusal("http://rebind.example.com/", p, resolvesTo("93.184.216.34", "10.0.0.5"))).toContain(
      "resolves to a private or local address",
    );
    expect(
      await refusal("http://nowhere.example/", p, async () => {
        throw new Error("ENOTFOUND");
      }),
    ).toBe("nowhere.example could not be resolved");
    // The real resolver: localhost is loopback wherever the tests run.
    await expect(checkUrl(new URL("http://localhost/"), p)).rejects.toThrow(
      "localhost resolves to a private or local address",
    );
  });

  test("ports outside the list, other schemes and URLs with credentials are refused", async () => {
    expect(await refusal("http://example.com:22/", p)).toBe("port 22 is not allowed (fetch_setting.allowed_ports)");
    expect(await refusal("https://example.com:6379/", p)).toContain("port 6379");
    expect(await refusal("file:///etc/passwd", p)).toContain("only http and https");
    expect(await refusal("gopher://example.com/", p)).toContain("only http and https");
    expect(await refusal("http://user:pw@example.com/", p)).toContain("user name or password");
  });
});

describe("the options", () => {
  test("allow_private_ip opens private and loopback addresses (not metadata)", async () => {
    const p = policy({ "fetch_setting.allow_private_ip": "true" });
    expect(await refusal("http://127.0.0.1/", p)).toBe("allowed");
    expect(await refusal("http://[::1]/", p)).toBe("allowed");
    expect(await refusal("http://intranet.local/", p, resolvesTo("192.168.1.10"))).toBe("allowed");
  });

  test("allowed_ports takes single ports and ranges; an empty list allows every port", async () => {
    const ranged = policy({ "fetch_setting.allowed_ports": JSON.stringify(["443", "9000-9100"]) });
    expect(await refusal("http://example.com:9050/", ranged)).toBe("allowed");
    expect(await refusal("http://example.com/", ranged)).toContain("port 80 is not allowed");
    expect(await refusal("http://example.com:1234/", policy({ "fetch_setting.allowed_ports": "[]" }))).toBe("allowed");
  });

  test("the domain list: blacklist by default, whitelist with domain_filter_mode; *.x matches x and its subdomains", async () => {
    const black = policy({ "fetch_setting.domain_list": JSON.stringify(["evil.example", "*.tracker.example"]) });
    expect(await refusal("http://evil.example/", black)).toBe("evil.example is on the domain blacklist");
    expect(await refusal("http://a.b.tracker.example/", black)).toContain("on the domain blacklist");
    expect(await refusal("http://tracker.example/", black)).toContain("on the domain blacklist");
    expect(await refusal("http://EVIL.example./", black)).toContain("on the domain blacklist");
    expect(await refusal("http://fine.example/", black)).toBe("allowed");
    const white = policy({
      "fetch_setting.domain_filter_mode": "true",
      "fetch_setting.domain_list": JSON.stringify(["*.cdn.example"]),
    });
    expect(await refusal("http://img.cdn.example/", white)).toBe("allowed");
    expect(await refusal("http://other.example/", white)).toBe("other.example is not on the domain whitelist");
    // The domain list judges names; an address literal is judged by the IP rules alone.
    expect(await refusal("http://93.184.216.34/", white)).toBe("allowed");
  });

  test("the IP list: CIDR or single addresses, blacklist or whitelist, for names too unless apply_ip_filter_for_domain is off", async () => {
    const black = policy({ "fetch_setting.ip_list": JSON.stringify(["93.184.216.0/24", "2606:4700::/32"]) });
    expect(await refusal("http://93.184.216.34/", black)).toBe("93.184.216.34 is an address on the IP blacklist");
    expect(await refusal("http://[2606:4700::1111]/", black)).toContain("on the IP blacklist");
    expect(await refusal("http://example.com/", black)).toBe("example.com resolves to an address on the IP blacklist");
    const notForNames = policy({
      "fetch_setting.ip_list": JSON.stringify(["93.184.216.34"]),
      "fetch_setting.apply_ip_filter_for_domain": "false",
    });
    expect(await refusal("http://example.com/", notForNames)).toBe("allowed");
    expect(await refusal("http://93.184.216.34/", notForNames)).toContain("on the IP blacklist");
    // Without the IP filter for names, the private ranges still apply to what a name resolves to.
    expect(await refusal("http://internal.example/", notForNames, resolvesTo("10.0.0.1"))).toContain(
      "private or local",
    );
    const white = policy({
      "fetch_setting.ip_filter_mode": "true",
      "fetch_setting.ip_list": JSON.stringify(["1.1.1.1"]),
    });
    expect(await refusal("http://1.1.1.1/", white)).toBe("allowed");
    expect(await refusal("http://8.8.8.8/", white)).toBe("8.8.8.8 is an address that is not on the IP whitelist");
    // Listing a private address is not enough: allow_private_ip decides those.
    expect(
      await refusal(
        "http://10.0.0.1/",
        policy({ "fetch_setting.ip_filter_mode": "true", "fetch_setting.ip_list": JSON.stringify(["10.0.0.0/8"]) }),
      ),
    ).toContain("private or local");
  });

  test("protection off checks nothing", async () => {
    const off = policy({ "fetch_setting.enable_ssrf_protection": "false" });
    expect(await refusal("http://127.0.0.1:22/", off)).toBe("allowed");
    expect(await refusal("http://169.254.169.254/", off)).toBe("allowed");
    expect(await refusal("file:///etc/passwd", off)).toContain("only http and https");
  });

  test("parsers", () => {
    expect(parsePortRanges(["80", 443, "8000-9000"])).toEqual([
      [80, 80],
      [443, 443],
      [8000, 9000],
    ]);
    for (const bad of ["0", "65536", "9000-8000", "http", "1-2-3"]) expect(() => parsePortRanges([bad])).toThrow();
    expect(parseCidr("10.0.0.0/8")?.prefix).toBe(104);
    expect(parseCidr("::1")?.prefix).toBe(128);
    for (const bad of ["10.0.0.0/33", "::/129", "example.com", "10.0.0.0/8/1", "1.2.3"])
      expect(parseCidr(bad)).toBeNull();
    expect([...parseIp("::ffff:1.2.3.4")!]).toEqual([...parseIp("1.2.3.4")!]);
    expect(parseIp("fe80::1%eth0")).not.toBeNull();
  });
});

describe("fetching", () => {
  let site: ReturnType<typeof Bun.serve>;
  let base: string;
  /** The slow route answered (after its 2 s): a time limit that fired first never saw it. */
  let slowAnswered = false;
  const seen: { path: string; host: string | null; auth: string | null; method: string }[] = [];
  beforeAll(() => {
    site = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        const url = new URL(req.url);
        seen.push({
          path: url.pathname,
          host: req.headers.get("host"),
          auth: req.headers.get("authorization"),
          method: req.method,
        });
        if (url.pathname === "/to-metadata")
          return new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/meta-data/" } });
        if (url.pathname === "/to-loopback")
          return new Response(null, { status: 301, headers: { location: "http://[::1]:1/x" } });
        if (url.pathname === "/hop") return new Response(null, { status: 302, headers: { location: "/img" } });
        if (url.pathname === "/loop") return new Response(null, { status: 302, headers: { location: "/loop" } });
        if (url.pathname === "/post-303") return new Response(null, { status: 303, headers: { location: "/img" } });
        if (url.pathname === "/elsewhere")
          return new Response(null, { status: 307, headers: { location: `http://localhost:${site.port}/img` } });
        if (url.pathname === "/big") return new Response(new Uint8Array(2048));
        if (url.pathname === "/stream-big") {
          return new Response(
            new ReadableStream({
              async pull(c) {
                c.enqueue(new Uint8Array(512));
                await Bun.sleep(1);
              },
            }),
          );
        }
        if (url.pathname === "/slow") {
          await Bun.sleep(2000);
          slowAnswered = true;
          return new Response("late");
        }
        return new Response("PNG!", { headers: { "content-type": "image/png" } });
      },
    });
    base = `http://127.0.0.1:${site.port}`;
  });
  afterAll(() => site.stop(true));

  const local = policy(LOCAL_FETCHES);
  const get = (url: string, more: Partial<Parameters<typeof fetchOutbound>[1]> = {}) =>
    fetchOutbound(url, { timeoutMs: 1000, maxBytes: 1024, policy: local, ...more });

  test("a local server is refused by default and reached once the options allow it", async () => {
    await expect(get(`${base}/img`, { policy: policy() })).rejects.toThrow("port");
    await expect(get(`${base}/img`, { policy: policy({ "fetch_setting.allowed_ports": "[]" }) })).rejects.toThrow(
      "127.0.0.1 is a private or local address",
    );
    const res = await get(`${base}/img`);
    expect(res.status).toBe(200);
    expect(new TextDecoder().decode(res.body)).toBe("PNG!");
    expect(res.headers.get("content-type")).toBe("image/png");
  });

  test("a name is connected to at the address that passed the check, keeping its Host", async () => {
    const before = seen.length;
    const res = await get(`http://images.example.test:${site.port}/img`, { resolve: resolvesTo("127.0.0.1") });
    expect(res.status).toBe(200);
    expect(seen[before]!.host).toBe(`images.example.test:${site.port}`);
  });

  test("every redirect hop is checked again: to metadata or to loopback is refused", async () => {
    await expect(get(`${base}/to-metadata`)).rejects.toThrow("169.254.169.254 is a cloud metadata address");
    await expect(
      get(`${base}/to-loopback`, {
        policy: policy({
          "fetch_setting.allowed_ports": "[]",
          "fetch_setting.ip_list": JSON.stringify(["127.0.0.1"]),
          "fetch_setting.ip_filter_mode": "true",
          "fetch_setting.allow_private_ip": "true",
        }),
      }),
    ).rejects.toThrow("::1 is an address that is not on the IP whitelist");
    const res = await get(`${base}/hop`);
    expect([res.status, res.url]).toEqual([200, `${base}/img`]);
    await expect(get(`${base}/loop`)).rejects.toThrow("more than 5 redirects");
  });

  test("a redirect to another origin drops the credentials; 303 turns a POST into a GET", async () => {
    let before = seen.length;
    await get(`${base}/elsewhere`, { headers: { authorization: "Bearer secret" } });
    expect(seen.slice(before).map((s) => s.auth)).toEqual(["Bearer secret", null]);
    before = seen.length;
    await get(`${base}/post-303`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(seen.slice(before).map((s) => s.method)).toEqual(["POST", "GET"]);
  });

  test("maxRedirects 0 hands the redirect back instead of following it", async () => {
    const res = await get(`${base}/to-metadata`, { maxRedirects: 0 });
    expect(res.status).toBe(302);
  });

  test("answers above the size cap are refused, declared or streamed; slow ones time out", async () => {
    await expect(get(`${base}/big`)).rejects.toThrow("the answer is larger than 1024 bytes");
    await expect(get(`${base}/stream-big`)).rejects.toThrow("the answer is larger than 1024 bytes");
    await expect(get(`${base}/slow`, { timeoutMs: 200 })).rejects.toThrow("no answer within");
    // The time limit ended the wait, not the answer: the server had not answered yet.
    expect(slowAnswered).toBe(false);
  });

  test("an unreachable address fails as a fetch error, not a refusal", async () => {
    const err = await get("http://127.0.0.1:1/x").catch((e) => e);
    expect(err).toBeInstanceOf(OutboundError);
    expect(err.refused).toBe(false);
  });
});
