// isApiUrl decides, for every request, whether the management guards (body size, rate limit, setup) apply:
// it must agree with the parsed URL's path.
import { expect, test } from "bun:test";
import { isApiUrl } from "../../server/http/paths.ts";

test("isApiUrl agrees with the parsed path, dot segments and escapes included", () => {
  const urls = [
    "http://localhost/api/user/self",
    "http://localhost:3000/api/",
    "http://h/v1/chat/completions",
    "http://h/apix/1",
    "http://h/api",
    "http://h/v1/../api/user",
    "http://h/%61pi/user",
    "http://h/./api/status",
    "http://h/v1/chat?x=/api/",
    "http://h/",
    "http://h",
  ];
  for (const u of urls) expect([u, isApiUrl(u)]).toEqual([u, new URL(u).pathname.startsWith("/api/")]);
});
