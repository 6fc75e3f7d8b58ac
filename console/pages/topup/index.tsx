// Wallet (spec 001 §2 Wallet page, §5 top-up rules, §7 wallet calls, §8 top-up messages).
import { useEffect, useState } from "react";
import {
  Alert,
  Button,
  Card,
  Grid,
  Input,
  InputNumber,
  Message,
  Radio,
  Space,
  Statistic,
  Typography,
} from "@arco-design/web-react";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { api } from "../../api/index.ts";
import { useApp } from "../../lib/app-state.tsx";
import { displayInCurrency, quotaPerUnit, renderQuota } from "../../lib/format.ts";
import { PAYMENT_METHODS, QUOTA_PRESETS } from "../../../server/catalogue/index.ts";

/** Submits the payment provider's fields as a form POST to its URL (the browser leaves the console). */
export function submitPaymentForm(url: string, fields: Record<string, unknown>): void {
  const form = document.createElement("form");
  form.method = "POST";
  form.action = url;
  form.style.display = "none";
  for (const [k, v] of Object.entries(fields)) {
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = k;
    input.value = String(v ?? "");
    form.appendChild(input);
  }
  document.body.appendChild(form);
  form.submit();
  form.remove();
}

export default function TopUpPage() {
  const { t } = useTranslation();
  const { status, user, setUser } = useApp();
  const inCurrency = displayInCurrency();
  const minTopUp = Math.max(1, Number(status.min_topup ?? 1)) * (inCurrency ? 1 : quotaPerUnit());
  const onlineEnabled = !!status.enable_online_topup;
  const topUpLink = typeof status.top_up_link === "string" ? status.top_up_link : "";

  const [quota, setQuota] = useState<number>(Number(user?.quota ?? 0));
  const [code, setCode] = useState("");
  const [redeeming, setRedeeming] = useState(false);
  const [amount, setAmount] = useState<number | undefined>(minTopUp);
  const [method, setMethod] = useState<string>(PAYMENT_METHODS[0]);
  const [price, setPrice] = useState<string>("");
  const [paying, setPaying] = useState(false);

  const refreshSelf = async () => {
    const r = await api.get("/api/user/self");
    if (r.success && r.data) {
      setQuota(Number(r.data.quota ?? 0));
      if (user) setUser({ ...user, quota: Number(r.data.quota ?? 0) });
    }
  };

  useEffect(() => {
    void refreshSelf();
  }, []);

  // Price preview follows the amount, debounced so typing does not fire a call per key.
  useEffect(() => {
    if (!onlineEnabled || amount === undefined || amount < minTopUp) {
      setPrice("");
      return;
    }
    const timer = setTimeout(async () => {
      const r = await api.post("/api/user/amount", { amount, top_up_code: "" });
      setPrice(r.success ? String(r.data) : "");
    }, 300);
    return () => clearTimeout(timer);
  }, [amount, onlineEnabled, minTopUp]);

  const redeem = async () => {
    if (!code.trim()) return Message.warning(t("ops.topup.enterCode"));
    setRedeeming(true);
    const r = await api.post("/api/user/topup", { key: code.trim() });
    setRedeeming(false);
    if (!r.success) return Message.error(r.message);
    Message.success(t("ops.topup.redeemed", { quota: renderQuota(Number(r.data ?? 0)) }));
    setCode("");
    await refreshSelf();
  };

  const openTopUpLink = () => globalThis.open?.(topUpLink, "_blank");

  const pay = async () => {
    if (!onlineEnabled) return Message.error(t("ops.topup.notEnabled"));
    if (amount === undefined || amount < minTopUp) return Message.error(t("ops.topup.minAmount", { min: minTopUp }));
    setPaying(true);
    const r = await api.post("/api/user/pay", { amount, top_up_code: "", payment_method: method });
    setPaying(false);
    if (!r.success || typeof r.url !== "string")
      return Message.error(r.success ? t("ops.topup.requestFailed") : r.message);
    submitPaymentForm(r.url, (r.data ?? {}) as Record<string, unknown>);
  };

  const presets = QUOTA_PRESETS.map((q) => (inCurrency ? q / quotaPerUnit() : q));

  return (
    <Page title={t("ops.topup.title")}>
      <Grid.Row gutter={16}>
        <Grid.Col xs={24} md={8}>
          <Card>
            <Statistic title={t("ops.topup.balance")} value={renderQuota(quota)} data-testid="balance" />
          </Card>
        </Grid.Col>
        <Grid.Col xs={24} md={16}>
          <Card title={t("ops.topup.redeemTitle")}>
            <Space wrap>
              <Input
                value={code}
                onChange={setCode}
                placeholder={t("ops.topup.codePlaceholder")}
                className="sy-w-320"
                onPressEnter={redeem}
              />
              <Button type="primary" loading={redeeming} onClick={redeem}>
                {t("ops.topup.redeem")}
              </Button>
              {/* Only a configured shop can be opened; without one the button would lead nowhere. */}
              {topUpLink && <Button onClick={openTopUpLink}>{t("ops.topup.buyCode")}</Button>}
            </Space>
          </Card>
        </Grid.Col>
      </Grid.Row>
      <Card
        title={t("ops.topup.onlineTitle")}
        style={{ marginTop: 16 }}
        data-testid="online-topup"
        data-enabled={String(onlineEnabled)}
      >
        {/* Switched off by the admin: the controls stay in view, disabled, under the reason (and what to do instead). */}
        {!onlineEnabled && (
          <Alert
            type="info"
            style={{ marginBottom: 16 }}
            data-testid="online-off"
            title={t("ops.topup.notEnabledTitle")}
            content={topUpLink ? t("ops.topup.notEnabledUseCode") : t("ops.topup.notEnabledAskAdmin")}
          />
        )}
        <Space direction="vertical" size="medium" style={{ width: "100%" }}>
          <div className="sy-tags">
            {presets.map((p) => (
              <Button
                key={p}
                type={amount === p ? "primary" : "secondary"}
                disabled={!onlineEnabled}
                onClick={() => setAmount(p)}
              >
                {inCurrency ? `$${p}` : renderQuota(p, 0, false)}
              </Button>
            ))}
          </div>
          <Space wrap align="center">
            <span>{t("ops.topup.amount")}</span>
            <InputNumber
              value={amount}
              min={1}
              precision={0}
              disabled={!onlineEnabled}
              onChange={(v) => setAmount(v === undefined || v === null ? undefined : Number(v))}
              style={{ width: 180 }}
            />
            <Typography.Text data-testid="price">{price ? t("ops.topup.pricePreview", { price }) : ""}</Typography.Text>
          </Space>
          <Radio.Group type="button" value={method} onChange={setMethod} disabled={!onlineEnabled}>
            {PAYMENT_METHODS.map((m) => (
              <Radio key={m} value={m}>
                {t(`ops.topup.method.${m}`)}
              </Radio>
            ))}
          </Radio.Group>
          <Button type="primary" loading={paying} onClick={pay} disabled={!onlineEnabled} data-testid="pay">
            {t("ops.topup.pay")}
          </Button>
        </Space>
      </Card>
    </Page>
  );
}
