import type React from "react";
import { Card, Typography } from "@arco-design/web-react";

/** The standard screen frame: a title and a card. */
export function Page({
  title,
  extra,
  children,
}: {
  title: React.ReactNode;
  extra?: React.ReactNode;
  children?: React.ReactNode;
}) {
  return (
    <Card className="sy-page" bordered={false}>
      <div className="sy-page-head">
        <Typography.Title heading={5} style={{ margin: 0 }}>
          {title}
        </Typography.Title>
        {extra}
      </div>
      {children}
    </Card>
  );
}
