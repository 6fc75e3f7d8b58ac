// What the drawing and task log pages show of a task's result: a Suno task's cover image and audio links,
// a video task's kind, and only web addresses from the upstream's data (never a javascript: link).
import { afterEach, describe, expect, test } from "bun:test";
import { screen } from "@testing-library/react";
import { USER, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";

let fm: FetchMock;
afterEach(() => {
  resetDom();
  fm?.restore();
});

/** Arco's Image puts the test id on the <img> or on its wrapper. */
const srcOf = (e: HTMLElement) => (e.tagName === "IMG" ? e : e.querySelector("img"))!.getAttribute("src");

const TASK = {
  id: 9,
  submit_time: 1_700_000_000,
  finish_time: 1_700_000_030,
  progress: "100%",
  channel_id: 0,
  platform: "suno",
  action: "MUSIC",
  task_id: "task-xyz",
  status: "SUCCESS",
  fail_reason: "",
};

describe("task results", () => {
  test("a finished song shows its cover and one link per audio file", async () => {
    const data = [
      { id: "c1", image_url: "https://cdn.test/c1.png", audio_url: "https://cdn.test/c1.mp3" },
      { id: "c2", image_url: "https://cdn.test/c2.png", audio_url: "https://cdn.test/c2.mp3" },
    ];
    fm = mockFetch({ "GET /api/task/self": ok([{ ...TASK, data }]) });
    await renderApp("/task", { user: USER });
    const img = await screen.findByTestId("task-image");
    expect(srcOf(img)).toBe("https://cdn.test/c1.png");
    expect(screen.getByText("Audio 1").closest("a")!.getAttribute("href")).toBe("https://cdn.test/c1.mp3");
    expect(screen.getByText("Audio 2").closest("a")!.getAttribute("href")).toBe("https://cdn.test/c2.mp3");
  });

  test("addresses that are not http(s) are not shown; a video task is named as one", async () => {
    const data = [{ id: "c1", image_url: "javascript:alert(1)", audio_url: "javascript:alert(2)" }];
    fm = mockFetch({
      "GET /api/task/self": ok([
        { ...TASK, data },
        { ...TASK, id: 10, task_id: "video_1", platform: "openai", action: "VIDEO", data: { id: "video_1" } },
      ]),
    });
    await renderApp("/task", { user: USER });
    expect(await screen.findByText("Video")).toBeTruthy();
    expect(screen.getByText("OpenAI")).toBeTruthy();
    expect(screen.queryByTestId("task-image")).toBeNull();
    expect(document.querySelector('a[href^="javascript"]')).toBeNull();
  });

  test("a drawing's image is shown for web addresses and the gateway's own /mj/image links only", async () => {
    const draw = (id: number, image_url: string) => ({
      id,
      submit_time: 1_700_000_000_000,
      finish_time: 1_700_000_090_000,
      channel_id: 0,
      action: "IMAGINE",
      mj_id: `mj-${id}`,
      code: 1,
      status: "SUCCESS",
      progress: "100%",
      image_url,
      prompt: "p",
      prompt_en: "",
      fail_reason: "",
    });
    fm = mockFetch({ "GET /api/mj/self": ok([draw(1, "/mj/image/mj-1?sig=abc"), draw(2, "javascript:alert(1)")]) });
    await renderApp("/midjourney", { user: USER });
    const images = await screen.findAllByTestId("mj-image");
    expect(images.map(srcOf)).toEqual(["/mj/image/mj-1?sig=abc"]);
    expect(screen.getByText("No image")).toBeTruthy();
  });
});
