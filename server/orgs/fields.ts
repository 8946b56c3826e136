/** The id every orgs row takes and the fields several orgs operations parse the same way. */
import crypto from "node:crypto";
import { z } from "zod";

export const newId = () => crypto.randomUUID();

export const prefixSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z][A-Za-z0-9]{1,9}$/, "a prefix is 2-10 letters or digits, starting with a letter")
  .transform((p) => p.toUpperCase());
export const emailSchema = z.email("must be an email address").trim().toLowerCase();
export const runtimeSchema = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._:-]+$/, "a runtime label is letters, digits and . _ : -");
