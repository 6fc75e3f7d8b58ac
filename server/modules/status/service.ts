// The status object (spec 000 §3.3) the console loads before anything else.
import type { AppDeps } from "../../deps.ts";
import { VERSION } from "../../config.ts";
import { setupStatus } from "../setup/service.ts";
import { oidcAuthorizationEndpoint } from "../oauth/oidc.ts";
import { panelStatus } from "../panels/validate.ts";

export async function statusObject(deps: AppDeps) {
  const o = deps.options;
  const setup = await setupStatus(deps);
  return {
    version: VERSION,
    start_time: deps.startTime,
    system_name: o.get("SystemName"),
    logo: o.get("Logo"),
    footer_html: o.get("Footer"),
    server_address: o.get("ServerAddress"),
    quota_per_unit: o.number("QuotaPerUnit"),
    display_in_currency: o.get("general_setting.quota_display_type") !== "TOKENS" && o.bool("DisplayInCurrencyEnabled"),
    // new-api's display type (USD, CNY, TOKENS, CUSTOM) and what the console needs to format amounts with it
    quota_display_type: o.get("general_setting.quota_display_type"),
    custom_currency_symbol: o.get("general_setting.custom_currency_symbol"),
    custom_currency_exchange_rate: o.number("general_setting.custom_currency_exchange_rate", 1),
    usd_exchange_rate: o.number("USDExchangeRate", 7.3),
    display_token_stat: o.bool("DisplayTokenStatEnabled"),
    enable_drawing: o.bool("DrawingEnabled"),
    enable_task: true,
    enable_data_export: o.bool("DataExportEnabled"),
    data_export_default_time: o.get("DataExportDefaultTime"),
    default_collapse_sidebar: o.bool("DefaultCollapseSidebar"),
    mj_notify_enabled: o.bool("MjNotifyEnabled"),
    default_use_auto_group: o.bool("DefaultUseAutoGroup"),
    enable_batch_update: true,
    stripe_unit_price: o.number("StripeUnitPrice", 8),
    // the dashboard's panels (console_setting.*) and new-api's console layout options
    ...panelStatus((k) => o.get(k)),
    HeaderNavModules: o.get("HeaderNavModules"),
    SidebarModulesAdmin: o.get("SidebarModulesAdmin"),
    user_agreement_enabled: o.get("legal.user_agreement") !== "",
    privacy_policy_enabled: o.get("legal.privacy_policy") !== "",
    checkin_enabled: o.bool("checkin_setting.enabled"),
    discord_oauth: false,
    discord_client_id: "",
    linuxdo_minimum_trust_level: o.number("LinuxDOMinimumTrustLevel", 0),
    log_filter_autocomplete_enabled: o.bool("general_setting.log_filter_autocomplete_enabled"),
    chats: o.json<unknown[]>("Chats", []),
    chat_link: "",
    chat_link2: "",
    docs_link: o.get("general_setting.docs_link"),
    top_up_link: o.get("TopUpLink"),
    price: o.number("Price"),
    min_topup: o.number("MinTopUp"),
    enable_online_topup: !!(o.get("PayAddress") && o.get("EpayId") && o.get("EpayKey")),
    self_use_mode_enabled: o.bool("SelfUseModeEnabled"),
    demo_site_enabled: o.bool("DemoSiteEnabled"),
    register_enabled: o.bool("RegisterEnabled"),
    password_login_enabled: o.bool("PasswordLoginEnabled"),
    password_register_enabled: o.bool("PasswordRegisterEnabled"),
    turnstile_check: o.bool("TurnstileCheckEnabled"),
    turnstile_site_key: o.get("TurnstileSiteKey"),
    email_verification: o.bool("EmailVerificationEnabled"),
    github_oauth: o.bool("GitHubOAuthEnabled"),
    github_client_id: o.get("GitHubClientId"),
    oidc_enabled: o.bool("oidc.enabled"),
    oidc_client_id: o.get("oidc.client_id"),
    // Filled from the well-known document when only that is configured (the console builds the login link from it).
    oidc_authorization_endpoint: await oidcAuthorizationEndpoint(deps),
    wechat_login: o.bool("WeChatAuthEnabled"),
    wechat_qrcode: o.get("WeChatAccountQRCodeImageURL"),
    telegram_oauth: o.bool("TelegramOAuthEnabled"),
    telegram_bot_name: o.get("TelegramBotName"),
    linuxdo_oauth: o.bool("LinuxDOOAuthEnabled"),
    linuxdo_client_id: o.get("LinuxDOClientId"),
    // new-api's passkey flags (the login page shows "sign in with a passkey" when passkey_login is on)
    passkey_login: o.bool("passkey.enabled"),
    passkey_display_name: o.get("passkey.rp_display_name"),
    passkey_rp_id: o.get("passkey.rp_id"),
    passkey_origins: o.get("passkey.origins"),
    passkey_allow_insecure: o.bool("passkey.allow_insecure_origin"),
    passkey_user_verification: o.get("passkey.user_verification"),
    passkey_attachment: o.get("passkey.attachment_preference"),
    root_2fa_required: o.bool("RootTwoFARequiredEnabled"),
    setup: setup.status,
    root_init: setup.root_init,
    database_type: setup.database_type,
  };
}
