// Third-party callback (spec 000 §2.1): shows a spinner while the server exchanges the code. Message
// 'bind' means an account was bound (go to personal settings); otherwise the user is logged in and
// lands on /. On failure the server message is shown and the user goes to /setting with a note.
import { useEffect, useRef } from "react";
import { Message, Spin } from "@arco-design/web-react";
import { useLocation, useNavigate, useSearchParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { api, qs } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import type { StoredUser } from "../../lib/storage.ts";
import { landingAfterSignIn, needsSecondFactor, secondFactorState } from "../../lib/signin.ts";

export default function OAuthCallbackPage() {
  const { t } = useTranslation();
  const { setUser } = useApp();
  const navigate = useNavigate();
  const { pathname } = useLocation();
  const [params] = useSearchParams();
  const kind = pathname.split("/").pop() ?? "";
  const started = useRef(false);

  useEffect(() => {
    if (started.current) return;
    started.current = true;
    void (async () => {
      const r = await api.get<StoredUser>(
        `/api/oauth/${kind}${qs({ code: params.get("code"), state: params.get("state"), iss: params.get("iss") ?? undefined })}`,
      );
      if (!r.success) {
        Message.error(r.message);
        navigate("/setting", { state: { note: t("oauth.failedNote") } });
        return;
      }
      if (r.message === "bind") {
        Message.success(t("oauth.bound"));
        navigate("/personal");
        return;
      }
      // A user with two-factor sign-in on gives the code on the login page first.
      if (needsSecondFactor(r.data)) {
        navigate("/login", secondFactorState(r.data));
        return;
      }
      if (r.data) setUser(r.data);
      Message.success(t("auth.loginSuccess"));
      navigate(landingAfterSignIn(r.data, "/"));
    })();
  }, []);

  return (
    <div style={{ display: "flex", justifyContent: "center", padding: 64 }}>
      <Spin tip={t("oauth.processing")} size={32} />
    </div>
  );
}
