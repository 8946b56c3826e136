/**
 * People, orgs and memberships as rows, made with their parts (an org's data key, its owner, the
 * signup credit); and the delete that shreds an org's data key first.
 */
import { eq, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { account, activity, members, orgs, user } from "../../db/schema/index.ts";
import type { Services } from "../context.ts";
import { DomainError, invalidInput } from "../errors.ts";
import { grantSignupCredit } from "../usage/credit.ts";
import { emailSchema, newId } from "./fields.ts";

/**
 * Finds the person with this email, creating them if needed, for the operator commands (which
 * vouch for the address: the person they create is marked verified). An existing account is
 * used only when its address is proven: verified by the OAuth provider it signed up with, or
 * made by an operator command and never given a sign-in since. An email + password sign-up
 * proves nothing (better-auth records it unverified), so it is refused: whoever signed up
 * first with the address would otherwise be handed the operator's org.
 */
export async function ensureUser(db: Db, email: string, name?: string): Promise<string> {
  const normalized = emailSchema.parse(email);
  await db
    .insert(user)
    .values({ id: newId(), email: normalized, name: name ?? normalized.split("@")[0]!, emailVerified: true })
    .onConflictDoNothing();
  const [row] = await db
    .select({ id: user.id, emailVerified: user.emailVerified, signIns: sql<number>`(select count(*)::int from ${account} a where a.user_id = ${user}.id)` })
    .from(user)
    .where(eq(user.email, normalized));
  if (!row!.emailVerified && row!.signIns > 0) {
    throw new DomainError(
      "FORBIDDEN",
      `${normalized} has an account whose email is not verified, so it may not be theirs`,
      "If the account is theirs, they sign in and create the org in the Dash (/dash/orgs/new) or redeem an invite; otherwise use another email.",
      { reason: "email_unverified" },
    );
  }
  return row!.id;
}

export async function createOrg(
  services: Pick<Services, "keyring"> & Partial<Pick<Services, "config" | "clock">>,
  db: Db,
  input: { name: string; ownerUserId: string; timeZone?: string },
): Promise<string> {
  const name = z.string().trim().min(1).max(100).parse(input.name);
  const timeZone = input.timeZone ?? "UTC";
  if (!isTimeZone(timeZone)) throw invalidInput(`unknown time zone ${timeZone}`, "Use an IANA name such as Europe/Berlin.");
  const id = newId();
  await db.insert(orgs).values({ id, name, timeZone });
  await services.keyring.createOrgKey(db, id);
  await db.insert(members).values({ id: newId(), orgId: id, userId: input.ownerUserId, role: "owner" });
  await grantSignupCredit(db, services, id, input.ownerUserId);
  return id;
}

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export async function ensureMember(db: Db, orgId: string, userId: string, role: "owner" | "admin" | "member" = "member") {
  await db.insert(members).values({ id: newId(), orgId, userId, role }).onConflictDoNothing();
}

/**
 * Deletes an org and destroys its data key first, so nothing left anywhere can be read. Its rows
 * go by cascade, but for its activity log, whose org_id has no foreign key (decision 109).
 */
export async function deleteOrg(services: Pick<Services, "keyring">, db: Db, orgId: string): Promise<void> {
  await services.keyring.shredOrg(db, orgId);
  await db.delete(activity).where(eq(activity.orgId, orgId));
  await db.delete(orgs).where(eq(orgs.id, orgId));
}
