// A cell for long texts: shows the start of the text; a click opens the whole text in a modal.
import { useState } from "react";
import { Modal, Typography } from "@arco-design/web-react";

export function LongText({ text, title, max = 30 }: { text: string | null | undefined; title: string; max?: number }) {
  const [open, setOpen] = useState(false);
  const value = text ?? "";
  if (!value) return <span>-</span>;
  const short = value.length > max ? `${value.slice(0, max)}…` : value;
  return (
    <>
      <Typography.Text style={{ cursor: "pointer" }} onClick={() => setOpen(true)} data-testid="long-text">
        {short}
      </Typography.Text>
      <Modal title={title} visible={open} onCancel={() => setOpen(false)} footer={null}>
        <pre style={{ whiteSpace: "pre-wrap", wordBreak: "break-word", margin: 0 }} data-testid="long-text-full">
          {value}
        </pre>
      </Modal>
    </>
  );
}
