// System settings (spec 000 §2.8, §5): server address, proxy worker, payment, login and registration
// toggles (saved immediately), email domain whitelist, SMTP, OIDC, GitHub, Linux DO, WeChat, Telegram
// and Turnstile.
import { useState } from "react";
import { Button, Message, Space } from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { OptionSection } from "../OptionSection.tsx";
import { ResponseCacheSection } from "./response-cache.tsx";
import { isJson, wellKnownProblem, type FieldDef } from "../fields.ts";

/** Reads an OIDC discovery document; returns the three endpoints or null. */
export async function fetchWellKnown(
  url: string,
): Promise<{ authorization_endpoint: string; token_endpoint: string; userinfo_endpoint: string } | null> {
  try {
    const res = await fetch(url.trim());
    if (!res.ok) return null;
    const doc = await res.json();
    if (!doc?.authorization_endpoint) return null;
    return {
      authorization_endpoint: doc.authorization_endpoint ?? "",
      token_endpoint: doc.token_endpoint ?? "",
      userinfo_endpoint: doc.userinfo_endpoint ?? "",
    };
  } catch {
    return null;
  }
}

function WellKnownButton({ url, onLoaded }: { url: string; onLoaded: (patch: Record<string, string>) => void }) {
  const { t } = useTranslation();
  const [loading, setLoading] = useState(false);
  const run = async () => {
    const problem = wellKnownProblem(url);
    if (problem || !url.trim()) {
      Message.error(t(problem ?? "system.wellKnownScheme"));
      return;
    }
    setLoading(true);
    const doc = await fetchWellKnown(url);
    setLoading(false);
    if (!doc) {
      Message.error(t("system.wellKnownFailed"));
      return;
    }
    onLoaded({
      "oidc.authorization_endpoint": doc.authorization_endpoint,
      "oidc.token_endpoint": doc.token_endpoint,
      "oidc.user_info_endpoint": doc.userinfo_endpoint,
    });
    Message.success(t("system.wellKnownLoaded"));
  };
  return (
    <Button loading={loading} onClick={() => void run()} style={{ marginBottom: 12 }}>
      {t("system.fetchWellKnown")}
    </Button>
  );
}

export function SystemTab() {
  const { t } = useTranslation();
  const callbackHint = (path: string) => t("system.callbackHint", { path });
  const general: FieldDef[] = [
    {
      key: "ServerAddress",
      label: t("system.serverAddress"),
      type: "url",
      placeholder: "https://gateway.example.com",
      help: t("system.serverAddressHelp"),
    },
  ];
  const worker: FieldDef[] = [
    { key: "WorkerUrl", label: t("system.workerUrl"), type: "url", span: 2 },
    { key: "WorkerValidKey", label: t("system.workerKey"), type: "secret", span: 2 },
    { key: "WorkerAllowHttpImageRequestEnabled", label: t("system.workerAllowHttp"), type: "switch" },
  ];
  const payment: FieldDef[] = [
    { key: "PayAddress", label: t("system.payAddress"), type: "url", span: 2 },
    { key: "CustomCallbackAddress", label: t("system.callbackAddress"), type: "url", span: 2 },
    { key: "EpayId", label: t("system.epayId"), type: "text", span: 2 },
    { key: "EpayKey", label: t("system.epayKey"), type: "secret", span: 2 },
    { key: "Price", label: t("system.price"), type: "number", min: 0, span: 2, help: t("system.priceHelp") },
    { key: "MinTopUp", label: t("system.minTopUp"), type: "number", min: 1, integer: true, span: 2 },
    {
      key: "TopupGroupRatio",
      label: t("system.topupGroupRatio"),
      type: "json",
      jsonMessage: "system.topupGroupRatioInvalid",
    },
  ];
  const toggle = (key: string, label: string): FieldDef => ({ key, label, type: "switch", immediate: true });
  const login: FieldDef[] = [
    toggle("PasswordLoginEnabled", t("system.passwordLogin")),
    toggle("PasswordRegisterEnabled", t("system.passwordRegister")),
    toggle("EmailVerificationEnabled", t("system.emailVerification")),
    toggle("GitHubOAuthEnabled", t("system.githubOAuth")),
    toggle("oidc.enabled", t("system.oidcLogin")),
    toggle("LinuxDOOAuthEnabled", t("system.linuxdoOAuth")),
    toggle("WeChatAuthEnabled", t("system.wechatLogin")),
    toggle("TelegramOAuthEnabled", t("system.telegramLogin")),
    toggle("RegisterEnabled", t("system.register")),
    toggle("TurnstileCheckEnabled", t("system.turnstile")),
  ];
  const email: FieldDef[] = [
    toggle("EmailDomainRestrictionEnabled", t("system.domainRestriction")),
    toggle("EmailAliasRestrictionEnabled", t("system.aliasRestriction")),
    {
      key: "EmailDomainWhitelist",
      label: t("system.domainWhitelist"),
      type: "domains",
      help: t("system.domainWhitelistHelp"),
    },
  ];
  const smtp: FieldDef[] = [
    { key: "SMTPServer", label: t("system.smtpServer"), type: "text", span: 1 },
    {
      key: "SMTPPort",
      label: t("system.smtpPort"),
      type: "number",
      min: 1,
      max: 65535,
      integer: true,
      span: 1,
      placeholder: "587",
    },
    { key: "SMTPAccount", label: t("system.smtpAccount"), type: "text", span: 1 },
    { key: "SMTPFrom", label: t("system.smtpFrom"), type: "text", span: 1 },
    { key: "SMTPToken", label: t("system.smtpToken"), type: "secret", span: 1 },
    { key: "SMTPSSLEnabled", label: t("system.smtpSsl"), type: "switch" },
  ];
  const oidc: FieldDef[] = [
    {
      key: "oidc.well_known",
      label: t("system.wellKnown"),
      type: "text",
      validate: (v) => wellKnownProblem(v),
      help: callbackHint("/oauth/oidc"),
    },
    { key: "oidc.client_id", label: t("system.clientId"), type: "text", span: 2 },
    { key: "oidc.client_secret", label: t("system.clientSecret"), type: "secret", span: 2 },
    { key: "oidc.authorization_endpoint", label: t("system.authorizationEndpoint"), type: "text", span: 1 },
    { key: "oidc.token_endpoint", label: t("system.tokenEndpoint"), type: "text", span: 1 },
    { key: "oidc.user_info_endpoint", label: t("system.userInfoEndpoint"), type: "text", span: 1 },
  ];
  const github: FieldDef[] = [
    { key: "GitHubClientId", label: t("system.clientId"), type: "text", span: 2, help: callbackHint("/oauth/github") },
    { key: "GitHubClientSecret", label: t("system.clientSecret"), type: "secret", span: 2 },
  ];
  const linuxdo: FieldDef[] = [
    {
      key: "LinuxDOClientId",
      label: t("system.clientId"),
      type: "text",
      span: 2,
      help: callbackHint("/oauth/linuxdo"),
    },
    { key: "LinuxDOClientSecret", label: t("system.clientSecret"), type: "secret", span: 2 },
  ];
  const wechat: FieldDef[] = [
    { key: "WeChatServerAddress", label: t("system.wechatServer"), type: "url", span: 1 },
    { key: "WeChatServerToken", label: t("system.wechatToken"), type: "secret", span: 1 },
    { key: "WeChatAccountQRCodeImageURL", label: t("system.wechatQr"), type: "text", span: 1 },
  ];
  const telegram: FieldDef[] = [
    { key: "TelegramBotToken", label: t("system.telegramToken"), type: "secret", span: 2 },
    { key: "TelegramBotName", label: t("system.telegramName"), type: "text", span: 2 },
  ];
  const turnstile: FieldDef[] = [
    { key: "TurnstileSiteKey", label: t("system.turnstileSiteKey"), type: "text", span: 2 },
    { key: "TurnstileSecretKey", label: t("system.turnstileSecretKey"), type: "secret", span: 2 },
  ];
  // Two-factor sign-in for the super admin and passkeys (new-api's passkey.* keys; server/modules/passkey/options.ts).
  const security: FieldDef[] = [
    toggle("RootTwoFARequiredEnabled", t("system.root2fa")),
    toggle("passkey.enabled", t("system.passkeyEnabled")),
    { key: "passkey.rp_display_name", label: t("system.passkeyRpName"), type: "text", span: 1 },
    { key: "passkey.rp_id", label: t("system.passkeyRpId"), type: "text", span: 1, help: t("system.passkeyRpIdHelp") },
    {
      key: "passkey.origins",
      label: t("system.passkeyOrigins"),
      type: "textarea",
      help: t("system.passkeyOriginsHelp"),
    },
    {
      key: "passkey.user_verification",
      label: t("system.passkeyUv"),
      type: "select",
      span: 1,
      options: [
        { value: "preferred", label: t("system.passkeyUvPreferred") },
        { value: "required", label: t("system.passkeyUvRequired") },
        { value: "discouraged", label: t("system.passkeyUvDiscouraged") },
      ],
    },
    {
      key: "passkey.attachment_preference",
      label: t("system.passkeyAttachment"),
      type: "select",
      span: 1,
      options: [
        { value: "", label: t("system.passkeyAttachmentAny") },
        { value: "platform", label: t("system.passkeyAttachmentPlatform") },
        { value: "cross-platform", label: t("system.passkeyAttachmentCross") },
      ],
    },
    { key: "passkey.allow_insecure_origin", label: t("system.passkeyInsecure"), type: "switch" },
  ];
  return (
    <Space direction="vertical" size="medium" style={{ width: "100%" }}>
      <OptionSection title={t("system.general")} fields={general} />
      <OptionSection
        title={t("system.worker")}
        fields={worker}
        // The worker key is kept unless typed, but clearing the worker URL clears the key with it.
        transform={(out, v, options) =>
          (v.WorkerUrl ?? "").trim() === "" && (options.WorkerUrl ?? "") !== ""
            ? { ...out, WorkerValidKey: v.WorkerValidKey ?? "" }
            : out
        }
      />
      <OptionSection
        title={t("system.payment")}
        fields={payment}
        beforeSave={(v, options) => {
          if (!(options.ServerAddress ?? "").trim()) return "system.serverAddressFirst";
          return isJson(v.TopupGroupRatio ?? "") ? null : "system.topupGroupRatioInvalid";
        }}
      />
      <OptionSection title={t("system.loginRegister")} fields={login} />
      <OptionSection title={t("system.emailDomains")} fields={email} />
      <OptionSection title={t("system.smtp")} fields={smtp} />
      <OptionSection
        title={t("system.oidc")}
        fields={oidc}
        extra={({ values, set }) => <WellKnownButton url={values["oidc.well_known"] ?? ""} onLoaded={set} />}
      />
      <OptionSection title={t("system.github")} fields={github} />
      <OptionSection title={t("system.linuxdo")} fields={linuxdo} />
      <OptionSection title={t("system.wechat")} fields={wechat} />
      <OptionSection title={t("system.telegram")} fields={telegram} />
      <OptionSection title={t("system.turnstileSection")} fields={turnstile} />
      <OptionSection title={t("system.security")} fields={security} />
      <ResponseCacheSection />
    </Space>
  );
}
