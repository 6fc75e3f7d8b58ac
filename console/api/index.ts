export {
  api,
  request,
  qs,
  setNavigator,
  onSessionExpired,
  translateServerMessage,
  USER_ID_HEADER,
  EXPIRED_LOGIN_PATH,
  type Envelope,
} from "./client.ts";
export { saveOptions, type SaveResult } from "./options.ts";
