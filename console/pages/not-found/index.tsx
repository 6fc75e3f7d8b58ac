import { Button, Result } from "@arco-design/web-react";
import { useNavigate } from "react-router-dom";
import { useTranslation } from "react-i18next";

export default function NotFoundPage() {
  const { t } = useTranslation();
  const navigate = useNavigate();
  return (
    <Result
      status="404"
      title="404"
      subTitle={t("notFound.message")}
      extra={
        <Button type="primary" onClick={() => navigate("/")}>
          {t("notFound.home")}
        </Button>
      }
    />
  );
}
