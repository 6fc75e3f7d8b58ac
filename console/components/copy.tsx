// Copy with the spec's fallback: when the clipboard refuses, a dialog shows the text to copy by hand.
import { Input, Message, Modal } from "@arco-design/web-react";
import { copyText } from "../lib/clipboard.ts";
import { t } from "../i18n/index.ts";

export async function copyWithFallback(text: string, successMessage = t("common.copied")): Promise<boolean> {
  if (await copyText(text)) {
    Message.success(successMessage);
    return true;
  }
  Modal.info({
    title: t("common.copyFailed"),
    content: <Input.TextArea value={text} autoSize readOnly data-testid="manual-copy" />,
  });
  return false;
}
