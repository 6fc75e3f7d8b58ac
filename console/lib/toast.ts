// Toasts that replace each other instead of stacking: a burst of row actions (disable three channels,
// delete two tokens) leaves one toast saying what the last one did, not a column of "Done".
import { Message } from "@arco-design/web-react";

const SUCCESS_ID = "sy-toast-success";
const ERROR_ID = "sy-toast-error";

export const toast = {
  success(content: string) {
    Message.success({ id: SUCCESS_ID, content });
  },
  error(content: string) {
    Message.error({ id: ERROR_ID, content });
  },
  warning(content: string) {
    Message.warning({ id: ERROR_ID, content });
  },
  info(content: string) {
    Message.info({ id: SUCCESS_ID, content });
  },
};
