// Redemption codes (admin) and the wallet (spec 001 §2, §4 redemption status, §5 redemption and top-up rules, §8 top-up messages).
import { afterEach, describe, expect, test } from "bun:test";
import { fireEvent, screen, waitFor, within } from "@testing-library/react";
import { ADMIN, USER, fail, mockFetch, ok, renderApp, resetDom, type FetchMock } from "./helpers.tsx";

let fm: FetchMock;
const realCreate = URL.createObjectURL;
const realClick = HTMLAnchorElement.prototype.click;
const realSubmit = HTMLFormElement.prototype.submit;
// Unmount explicitly (with several test files in one run, the library's own cleanup is registered only once),
// and clear the toasts, so no test's message is left in the document for the next one.
afterEach(() => {
  resetDom();
  fm?.restore();
  URL.createObjectURL = realCreate;
  HTMLAnchorElement.prototype.click = realClick;
  HTMLFormElement.prototype.submit = realSubmit;
});

const CODES = [
  { id: 1, name: "promo", key: "k1", status: 1, quota: 100000, created_time: 1_700_000_000, used_user_id: 0 },
  { id: 2, name: "spent", key: "k2", status: 3, quota: 500000, created_time: 1_700_000_000, used_user_id: 7 },
];

/** Records downloads: the blob text and the file name of the clicked anchor. */
function captureDownloads() {
  const out: Array<{ name: string; text: Promise<string> }> = [];
  let lastBlob: Blob | null = null;
  URL.createObjectURL = ((b: Blob) => {
    lastBlob = b;
    return "blob:mock";
  }) as typeof URL.createObjectURL;
  HTMLAnchorElement.prototype.click = function (this: HTMLAnchorElement) {
    out.push({ name: this.download, text: lastBlob!.text() });
  };
  return out;
}

describe("redemption page", () => {
  test("is admin only", async () => {
    fm = mockFetch({});
    await renderApp("/redemption", { user: USER });
    expect(await screen.findByText("The page does not exist, please check the address")).toBeTruthy();
    expect(fm.calls.some((c) => c.path.startsWith("/api/redemption"))).toBe(false);
  });

  test("a used code cannot be enabled or edited; an unused one can be disabled", async () => {
    fm = mockFetch({ "GET /api/redemption/": ok({ items: CODES, total: 2 }), "PUT /api/redemption/": ok() });
    await renderApp("/redemption", { user: ADMIN });
    const spent = (await screen.findByText("spent")).closest("tr")!;
    expect(within(spent).getByText("Enable").closest("button")!.disabled).toBe(true);
    expect(within(spent).getByText("Edit").closest("button")!.disabled).toBe(true);
    fireEvent.click(within(screen.getByText("promo").closest("tr")!).getByText("Disable"));
    await waitFor(() => expect(fm.calls.some((c) => c.method === "PUT")).toBe(true));
    const put = fm.calls.find((c) => c.method === "PUT")!;
    expect(put.query.get("status_only")).toBe("true");
    expect(put.body).toEqual({ id: 1, status: 2 });
  });

  test("creating sends name, default quota 100000 and count 1, and downloads the codes as <name>.txt", async () => {
    const downloads = captureDownloads();
    fm = mockFetch({
      "GET /api/redemption/": ok({ items: [], total: 0 }),
      "POST /api/redemption/": ok(["CODE-A", "CODE-B"]),
    });
    await renderApp("/redemption", { user: ADMIN });
    fireEvent.click(await screen.findByText("Add codes"));
    fireEvent.change(await screen.findByPlaceholderText("Empty = the quota amount"), { target: { value: "spring" } });
    fireEvent.click(screen.getAllByText("Submit").at(-1)!);
    await waitFor(() => expect(downloads.length).toBe(1));
    expect(fm.calls.find((c) => c.method === "POST")!.body).toEqual({ name: "spring", quota: 100000, count: 1 });
    expect(downloads[0].name).toBe("spring.txt");
    expect(await downloads[0].text).toBe("CODE-A\nCODE-B");
  });

  test("an empty name becomes the formatted quota; names over 20 characters are refused", async () => {
    captureDownloads();
    fm = mockFetch({ "GET /api/redemption/": ok({ items: [], total: 0 }), "POST /api/redemption/": ok(["X"]) });
    await renderApp("/redemption", { user: ADMIN });
    fireEvent.click(await screen.findByText("Add codes"));
    const name = await screen.findByPlaceholderText("Empty = the quota amount");
    fireEvent.change(name, { target: { value: "x".repeat(21) } });
    fireEvent.click(screen.getAllByText("Submit").at(-1)!);
    expect((await screen.findByTestId("form-error")).textContent).toBe("code name length must be 1-20");
    expect(fm.calls.some((c) => c.method === "POST")).toBe(false);
    fireEvent.change(name, { target: { value: "" } });
    fireEvent.click(screen.getAllByText("Submit").at(-1)!);
    await waitFor(() => expect(fm.calls.some((c) => c.method === "POST")).toBe(true));
    expect(fm.calls.find((c) => c.method === "POST")!.body.name).toBe("$0.20");
  });
});

describe("wallet page", () => {
  const wallet = (extra: Record<string, unknown> = {}) => ({
    "GET /api/user/self": ok({ ...USER, quota: 500000 }),
    ...extra,
  });

  test("shows the balance and refuses an empty code with 'enter redemption code'", async () => {
    fm = mockFetch(wallet());
    await renderApp("/topup", { user: USER });
    expect(await screen.findByText("$1.00")).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Redeem" }));
    expect(await screen.findByText("enter redemption code")).toBeTruthy();
    expect(fm.calls.some((c) => c.path === "/api/user/topup")).toBe(false);
  });

  test("redeeming sends the key, shows the added quota and refreshes the balance", async () => {
    let quota = 500000;
    fm = mockFetch({
      "GET /api/user/self": () => ok({ ...USER, quota }),
      "POST /api/user/topup": () => {
        quota += 100000;
        return ok(100000, "redeemed");
      },
    });
    await renderApp("/topup", { user: USER });
    fireEvent.change(await screen.findByPlaceholderText("Redemption code"), { target: { value: " abc123 " } });
    fireEvent.click(screen.getByRole("button", { name: "Redeem" }));
    expect(await screen.findByText("Redeemed: $0.20 added")).toBeTruthy();
    expect(fm.calls.find((c) => c.path === "/api/user/topup")!.body).toEqual({ key: "abc123" });
    expect(await screen.findByText("$1.20")).toBeTruthy();
  });

  test("a used code shows the server's message", async () => {
    fm = mockFetch(wallet({ "POST /api/user/topup": fail("redemption code already used") }));
    await renderApp("/topup", { user: USER });
    fireEvent.change(await screen.findByPlaceholderText("Redemption code"), { target: { value: "abc" } });
    fireEvent.click(screen.getByRole("button", { name: "Redeem" }));
    expect(await screen.findByText("redemption code already used")).toBeTruthy();
  });

  test("Buy a code is offered only with a top-up link, and opens it in a new tab", async () => {
    const realOpen = globalThis.open;
    const opened: unknown[][] = [];
    globalThis.open = ((...args: unknown[]) => {
      opened.push(args);
      return null;
    }) as typeof globalThis.open;
    try {
      fm = mockFetch(wallet());
      await renderApp("/topup", { user: USER, status: { top_up_link: "" } });
      await screen.findByRole("button", { name: "Redeem" });
      expect(screen.queryByRole("button", { name: "Buy a code" })).toBeNull();
      resetDom();
      fm.restore();

      fm = mockFetch(wallet());
      await renderApp("/topup", { user: USER, status: { top_up_link: "https://shop.example/codes" } });
      fireEvent.click(await screen.findByRole("button", { name: "Buy a code" }));
      expect(opened).toEqual([["https://shop.example/codes", "_blank"]]);
    } finally {
      globalThis.open = realOpen;
    }
  });

  test("online top-up disabled: the reason is shown, presets, amount, method and Pay are disabled, nothing is sent", async () => {
    fm = mockFetch(wallet());
    await renderApp("/topup", {
      user: USER,
      status: { enable_online_topup: false, top_up_link: "https://shop.example/codes" },
    });
    const reason = await screen.findByTestId("online-off");
    expect(reason.textContent).toContain("Online top-up is turned off by the administrator");
    expect(reason.textContent).toContain("Buy a code");
    const card = screen.getByTestId("online-topup");
    const pay = within(card).getByTestId("pay") as HTMLButtonElement;
    expect(pay.disabled).toBe(true);
    expect((within(card).getByText("$10").closest("button") as HTMLButtonElement).disabled).toBe(true);
    expect((card.querySelector(".arco-input-number input") as HTMLInputElement).disabled).toBe(true);
    expect(
      (within(card).getByText("WeChat Pay").closest("label")!.querySelector("input") as HTMLInputElement).disabled,
    ).toBe(true);
    fireEvent.click(pay);
    expect(fm.calls.some((c) => c.path === "/api/user/pay" || c.path === "/api/user/amount")).toBe(false);
    // Redeeming a code still works.
    expect((screen.getByRole("button", { name: "Redeem" }) as HTMLButtonElement).disabled).toBe(false);
  });

  test("online top-up: a preset sets the amount, the price is previewed, and pay posts a form to the payment URL", async () => {
    const submitted: Array<{ action: string; fields: Record<string, string> }> = [];
    HTMLFormElement.prototype.submit = function (this: HTMLFormElement) {
      const fields: Record<string, string> = {};
      for (const input of Array.from(this.querySelectorAll("input"))) fields[input.name] = input.value;
      submitted.push({ action: this.action, fields });
    };
    fm = mockFetch(
      wallet({
        "POST /api/user/amount": (c: any) => ok((c.body.amount * 7.3).toFixed(2)),
        "POST /api/user/pay": {
          success: true,
          message: "success",
          data: { pid: "1001", money: "73.00", sign: "abc" },
          url: "https://pay.example/submit.php",
        },
      }),
    );
    await renderApp("/topup", { user: USER, status: { enable_online_topup: true, min_topup: 1 } });
    fireEvent.click(await screen.findByText("$10"));
    await waitFor(() => expect(screen.getByTestId("price").textContent).toBe("To pay: 73.00"), { timeout: 3000 });
    fireEvent.click(screen.getByText("WeChat Pay"));
    fireEvent.click(screen.getByRole("button", { name: "Pay" }));
    await waitFor(() => expect(submitted.length).toBe(1));
    expect(fm.calls.find((c) => c.path === "/api/user/pay")!.body).toEqual({
      amount: 10,
      top_up_code: "",
      payment_method: "wx",
    });
    expect(submitted[0].action).toBe("https://pay.example/submit.php");
    expect(submitted[0].fields).toEqual({ pid: "1001", money: "73.00", sign: "abc" });
  });

  test("an amount under the minimum top-up is refused", async () => {
    fm = mockFetch(wallet());
    await renderApp("/topup", { user: USER, status: { enable_online_topup: true, min_topup: 5 } });
    await screen.findByText("Amount");
    const amount = document.querySelector(".arco-input-number input") as HTMLInputElement;
    fireEvent.change(amount, { target: { value: "2" } });
    fireEvent.blur(amount);
    fireEvent.click(screen.getByRole("button", { name: "Pay" }));
    expect(await screen.findByText("top-up amount cannot be less than 5")).toBeTruthy();
    expect(fm.calls.some((c) => c.path === "/api/user/pay")).toBe(false);
  });
});
