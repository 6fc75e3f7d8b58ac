// /channel/add and /channel/edit/{id}: the channel form as a page (the list also opens it in a drawer).
import { useNavigate, useParams } from "react-router-dom";
import { useTranslation } from "react-i18next";
import { Page } from "../../components/Page.tsx";
import { ChannelForm } from "./ChannelForm.tsx";

export default function ChannelEditPage() {
  const { t } = useTranslation();
  const { id } = useParams();
  const navigate = useNavigate();
  const channelId = id && /^\d+$/.test(id) ? Number(id) : undefined;
  return (
    <Page title={channelId ? t("ops.ch.editTitle") : t("ops.ch.addTitle")}>
      <div style={{ maxWidth: 760 }}>
        <ChannelForm
          key={channelId ?? "new"}
          id={channelId}
          onSaved={() => navigate("/channel")}
          onCancel={() => navigate("/channel")}
        />
      </div>
    </Page>
  );
}
