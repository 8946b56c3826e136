import { and, eq, gt, sql } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { deviceCode } from "../../db/schema/index.ts";
import { DomainError, invalidInput, notFound } from "../errors.ts";

/**
 * The /device page's side of the device flow (RFC 8628; decision 037). better-auth issues the
 * codes and redeems them for the polling CLI; looking a code up and deciding it are ours, because
 * its own look-up claimed the code for whoever opened it first (whose Approve then signed the CLI
 * in as them, and made the real person's Approve fail), and answered anyone, signed in or not,
 * whether a code was live. Here a look-up only reads; approving binds the code to the person who
 * approves, in one conditional update, so of two people deciding at once exactly one does. Its
 * HTTP endpoints for these (`/api/auth/device`, `/device/approve`, `/device/deny`) are turned
 * off (DEVICE_DECISION_PATHS).
 */
export const DEVICE_DECISION_PATHS = ["/device", "/device/approve", "/device/deny"];

export type DeviceCodeState = "pending" | "approved" | "denied" | "expired";

/** A user code as people type it (`abcd-efgh`): its letters and digits, upper case. */
export const normalizeUserCode = (code: string): string => code.replace(/[^a-zA-Z0-9]/g, "").toUpperCase().slice(0, 64);

const unknownCode = () => notFound("that code", "Check the code shown in your terminal; `retasc login` prints a new one.");

/** The state of a code, read and left as it is; an unknown code is NOT_FOUND. */
export async function lookUpDeviceCode(db: Db, userCode: string, now: Date): Promise<DeviceCodeState> {
  const [row] = await db.select({ status: deviceCode.status, expiresAt: deviceCode.expiresAt }).from(deviceCode).where(eq(deviceCode.userCode, normalizeUserCode(userCode)));
  if (!row) throw unknownCode();
  if (row.expiresAt <= now) return "expired";
  return row.status as DeviceCodeState;
}

/**
 * Approves (or denies) a pending, unexpired code as `userId`: the CLI polling it is then signed in
 * as that person, and nobody else can decide it. Refused with what the code's state is otherwise.
 */
export async function decideDeviceCode(db: Db, input: { userCode: string; userId: string; decision: "approved" | "denied" }, now: Date): Promise<void> {
  const userCode = normalizeUserCode(input.userCode);
  const decided = await db
    .update(deviceCode)
    .set({ status: input.decision, userId: input.userId })
    .where(and(eq(deviceCode.userCode, userCode), eq(deviceCode.status, "pending"), gt(deviceCode.expiresAt, sql`${now.toISOString()}::timestamptz`)))
    .returning({ id: deviceCode.id });
  if (decided.length > 0) return;
  const state = await lookUpDeviceCode(db, userCode, now);
  if (state === "expired") throw invalidInput("this code has expired", "Run `retasc login` again for a new one.");
  throw new DomainError("CONFLICT", `this code was already ${state}`, "Run `retasc login` again if you meant to sign in.");
}
