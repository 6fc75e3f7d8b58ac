import type React from "react";
import { Card, Typography } from "@arco-design/web-react";
import { useApp } from "../lib/app-state.tsx";
import { logoUrl } from "../lib/logo.ts";

/** The centred card used by the sign-in, registration, reset and setup screens. */
export function AuthCard({
  title,
  children,
  width = 400,
}: {
  title: string;
  children: React.ReactNode;
  width?: number;
}) {
  const { status } = useApp();
  return (
    <div className="sy-auth">
      <Card style={{ width: "100%", maxWidth: width }} className="sy-auth-card">
        <div className="sy-auth-head">
          <img
            src={logoUrl(status.logo)}
            alt=""
            width={40}
            height={40}
            onError={(e) => ((e.target as HTMLImageElement).style.display = "none")}
          />
          <Typography.Title heading={5}>{title}</Typography.Title>
        </div>
        {children}
      </Card>
    </div>
  );
}

/** The Arco form-item props that show a message under the field the user is typing in. */
export const fieldError = (message: string | null | undefined) =>
  message ? { validateStatus: "error" as const, help: message } : {};
