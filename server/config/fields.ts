import fs from "node:fs";
import { z } from "zod";

/** The kinds of value an environment variable holds, each parsed with a one-line message for a bad one (./index.ts). */

export const positiveInt = (fallback: number) =>
  z.coerce.number().int("must be a whole number").min(1, "must be at least 1").default(fallback);

export const optionalUrl = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(z.url("must be a URL").optional())
  .optional();

/** A Markdown file the operator gives: its path, checked readable at boot; unset or empty = none. */
export const operatorTextFile = z
  .string()
  .trim()
  .transform((v, ctx) => {
    if (v === "") return undefined;
    try {
      fs.accessSync(v, fs.constants.R_OK);
      return v;
    } catch (error) {
      ctx.addIssue({ code: "custom", message: `cannot read ${v} (${(error as NodeJS.ErrnoException).code ?? "unreadable"})` });
      return z.NEVER;
    }
  })
  .optional();

export const optionalPostgresUrl = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .pipe(z.string().regex(/^postgres(ql)?:\/\//, "must start with postgres:// or postgresql://").optional())
  .optional();

/** A comma-separated list, each item trimmed and checked by `item`; unset or empty = none. */
const commaList = <T extends z.ZodType<unknown, string>>(item: T) =>
  z
    .string()
    .trim()
    .transform((v) => v.split(",").map((i) => i.trim()).filter((i) => i !== ""))
    .pipe(z.array(item))
    .default([]);

/** A comma-separated list of web origins (`scheme://host[:port]`, nothing after), each written as a browser sends it. */
export const originList = commaList(
  z.string().refine((o) => URL.canParse(o) && new URL(o).origin === o && /^https?:$/.test(new URL(o).protocol), {
    message: "must be origins like https://inspector.example.com (scheme, host and port only, no trailing slash), comma-separated",
  }),
);

/**
 * A comma-separated list of `host:port` (`[::1]:8080` for IPv6): the hosts that URLs people and
 * orgs enter may reach although they are not public https addresses (server/outbound/address.ts).
 * Each host is written as a URL's hostname would be (lower case, IPv6 compressed), so the
 * comparison with a URL's is exact.
 */
const hostPort = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]\s/@]+):(\d{1,5})$/;
export const hostPortList = commaList(
  z
    .string()
    .refine((h) => hostPort.test(h) && URL.canParse(`https://${hostPort.exec(h)![1]}`) && Number(hostPort.exec(h)![2]) <= 65535, {
      message: "must be host:port pairs like gitlab.internal:443 or 127.0.0.1:8080, comma-separated",
    })
    .transform((h) => {
      const [, host, port] = hostPort.exec(h)!;
      return `${new URL(`https://${host}`).hostname}:${Number(port)}`;
    }),
);

export const base64Key = z
  .string()
  .trim()
  .refine((v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && Buffer.from(v, "base64").length === 32, {
    message: "must be 32 bytes encoded as base64 (try: openssl rand -base64 32)",
  });

