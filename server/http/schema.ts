// Schema helpers shared by the modules' model.ts files. They describe the management API for the OpenAPI
// document (GET /api/openapi.json) and validate at the same time, so they are permissive on purpose: the
// console and scripts send fields a schema does not name, and replies keep every field they carry (a
// response schema with a closed object would make Elysia strip the fields it does not name).
//
// Reply schemas are documentation: they carry `noValidate`, so Elysia never turns a reply into a 422 because
// a number came back as a string from PostgreSQL. Elysia still runs its cleaner over a reply, which is why a
// described `data` is built from `loose` objects with scalar (or t.Any) fields, and arrays only where the code
// always answers an array: the cleaner cannot alter such a value.
import { t, type DocumentDecoration, type TSchema } from "elysia";
import type { TInteger, TLiteral, TNull, TProperties, TUnion } from "@sinclair/typebox";
import { ROLE } from "../catalogue/index.ts";
import { integerMessage, numberMessage, type Range } from "./numbers.ts";

/** An object that accepts, and keeps, properties it does not name. */
export const loose = <P extends TProperties>(properties: P, options: { description?: string } = {}) =>
  t.Object(properties, { additionalProperties: true, ...options });

/**
 * The management reply: `{success, message, data}`. `data` is described where practical and is any JSON
 * otherwise; errors have the same shape with `success: false` (and sometimes a `code`). `extra`: top-level
 * fields some one-api/new-api replies carry beside data.
 */
export const envelope = (
  data: TSchema = t.Any({ description: "the answer; its shape depends on the route" }),
  description?: string,
  extra: TProperties = {},
) =>
  loose(
    {
      success: t.Boolean({ description: "false when the call failed; message then says why" }),
      message: t.String({ description: "a human-readable note, empty on most successes" }),
      data: t.Optional(data),
      ...extra,
    },
    { description: description ?? "the management envelope {success, message, data}", noValidate: true } as {
      description: string;
    },
  );

/** A reply without data (`ok()` / `ok(undefined, "saved")`). */
export const okReply = envelope(t.Null({ description: "absent" }), "{success, message}: no data");

/** A reply whose data is any JSON value. */
export const anyReply = envelope();

/** One page of a list: new-api's shape ({items, total, page, page_size}). */
export const pageOf = (item: TSchema = t.Any()) =>
  envelope(
    loose({
      items: t.Array(item),
      total: t.Integer({ description: "rows matching the filter, over all pages" }),
      page: t.Optional(t.Integer()),
      page_size: t.Optional(t.Integer()),
    }),
    "one page of the list",
  );

/** A number the console may send as a numeric string (or null, as Go's JSON accepts); the service reads and checks it. */
export const numberish = (description?: string) =>
  t.Union([t.Number(), t.String(), t.Null()], description ? { description } : {});

/**
 * An integer field within `range` (a column's, http/numbers.ts): a number or its decimal text, anything else
 * (a fraction, 1e21, 2^53 + 1, a word) refused with a 400 naming the field. `blank`: null and "" are let through
 * as "not set" too, as the console's forms send them.
 */
export function int(field: string, range: Range, opts?: { description?: string; blank?: false }): TInteger;
export function int(
  field: string,
  range: Range,
  opts: { description?: string; blank: true },
): TUnion<[TInteger, TNull, TLiteral<"">]>;
export function int(field: string, range: Range, opts: { description?: string; blank?: boolean } = {}) {
  const error = integerMessage(field, range);
  const n = t.Integer({
    minimum: range.min,
    maximum: range.max,
    error,
    ...(opts.description ? { description: opts.description } : {}),
  });
  return opts.blank ? t.Union([n, t.Null(), t.Literal("")], { error }) : n;
}

/** A number field within `range` that may carry a fraction (a price, a ratio, a threshold); the rest as int(). */
export function num(field: string, range: Range, opts: { description?: string } = {}) {
  return t.Number({
    minimum: range.min,
    maximum: range.max,
    error: numberMessage(field, range),
    ...(opts.description ? { description: opts.description } : {}),
  });
}

/** Text that may arrive as null (treated as empty by the service). */
export const text = (description?: string) => t.Union([t.String(), t.Null()], description ? { description } : {});

/** `:id` path parameter, checked by the handler or service (kept as a string so its own message is answered). */
export const idPathParam = t.Object({ id: t.String({ description: "numeric id" }) });

/** Paging query parameters the lists accept (pages from 1; `size` is one-api's name for `page_size`). */
export const pagingQuery = {
  p: t.Optional(t.String({ description: "page number" })),
  page_size: t.Optional(t.String({ description: "rows per page" })),
  size: t.Optional(t.String({ description: "rows per page (one-api's name)" })),
};

/** The OpenAPI extension naming an operation's least role: public, viewer, user, admin or root. */
export const ROLE_FIELD = "x-switchyard-role";

/** Signed-in callers: session cookie + New-Api-User, or an access token (security schemes of the document). */
const SIGNED_IN: Record<string, string[]>[] = [{ session: [], userId: [] }, { accessToken: [] }];

/** What the `role` macro adds to a route's OpenAPI operation: its least role and how to sign in. */
export function roleDetail(min: number): DocumentDecoration {
  const role = min >= ROLE.root ? "root" : min >= ROLE.admin ? "admin" : "user";
  return { [ROLE_FIELD]: role, security: SIGNED_IN } as DocumentDecoration;
}

/** The same for the `viewer` macro: guests allowed, a signed-in caller recognised. */
export const viewerDetail = (): DocumentDecoration =>
  ({ [ROLE_FIELD]: "viewer", security: [{}, ...SIGNED_IN] }) as DocumentDecoration;
