import { describe, expect, test } from "bun:test";
import {
  KEY_FAILURE_COOLDOWN_SECONDS,
  markKeyFailed,
  multiKeyInfo,
  parseChannelInfo,
  pickChannelKey,
} from "../../server/modules/channel/keys.ts";

const multi = (keys: string[], mode: "polling" | "random" = "polling") => ({
  key: keys.join("\n"),
  channel_info: JSON.stringify(multiKeyInfo(keys.length, mode)),
});

describe("pickChannelKey", () => {
  test("a single-key channel always answers its key", () => {
    expect(pickChannelKey({ key: " sk-one ", channel_info: "" }, 100)).toMatchObject({ key: "sk-one", index: 0 });
    // A multi-line key on a channel that is not multi-key (e.g. a JSON credential) is used whole.
    expect(pickChannelKey({ key: '{\n"a":1\n}', channel_info: null }, 100).key).toBe('{\n"a":1\n}');
  });

  test("polling rotates round-robin and wraps", () => {
    let ch = multi(["a", "b", "c"]);
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const p = pickChannelKey(ch, 100);
      seen.push(p.key);
      ch = { ...ch, channel_info: JSON.stringify(p.info) };
    }
    expect(seen).toEqual(["a", "b", "c", "a", "b"]);
  });

  test("keys that failed recently are skipped until the cooldown passes", () => {
    let info = parseChannelInfo(multi(["a", "b", "c"]).channel_info);
    info = markKeyFailed(info, 1, 1000);
    const ch = { key: "a\nb\nc", channel_info: info };
    const first = pickChannelKey(ch, 1010);
    expect(first.key).toBe("a");
    const second = pickChannelKey({ ...ch, channel_info: first.info }, 1010);
    expect(second.key).toBe("c");
    const later = pickChannelKey({ ...ch, channel_info: first.info }, 1000 + KEY_FAILURE_COOLDOWN_SECONDS);
    expect(later.key).toBe("b");
  });

  test("when every key failed recently, the one that failed longest ago is used", () => {
    let info = parseChannelInfo(multi(["a", "b", "c"]).channel_info);
    info = markKeyFailed(markKeyFailed(markKeyFailed(info, 0, 1005), 1, 1001), 2, 1003);
    expect(pickChannelKey({ key: "a\nb\nc", channel_info: info }, 1010).key).toBe("b");
  });

  test("random mode picks uniformly among healthy keys", () => {
    let info = parseChannelInfo(multi(["a", "b", "c", "d"], "random").channel_info);
    info = markKeyFailed(info, 0, 1000);
    const ch = { key: "a\nb\nc\nd", channel_info: info };
    expect(pickChannelKey(ch, 1001, () => 0).key).toBe("b");
    expect(pickChannelKey(ch, 1001, () => 0.99).key).toBe("d");
    expect(pickChannelKey(ch, 1001, () => 0.5).key).toBe("c");
  });

  test("a malformed channel_info is treated as a single-key channel", () => {
    expect(pickChannelKey({ key: "k", channel_info: "{not json" }, 1)).toMatchObject({ key: "k", index: 0 });
  });
});
