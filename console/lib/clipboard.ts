// Copy to the clipboard; when the browser refuses (insecure origin, permissions), the caller shows the
// text in a dialog so the user can copy it by hand (spec 000 §8).
export async function copyText(text: string): Promise<boolean> {
  try {
    if (typeof globalThis.navigator?.clipboard?.writeText === "function") {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the legacy path
  }
  try {
    const area = document.createElement("textarea");
    area.value = text;
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    const done = typeof document.execCommand === "function" && document.execCommand("copy");
    area.remove();
    return !!done;
  } catch {
    return false;
  }
}
