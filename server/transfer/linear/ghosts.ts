import { and, eq, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../../db/client.ts";
import { importGhosts, user } from "../../../db/schema/index.ts";
import { recordActivity } from "../../activity/index.ts";
import type { Ctx } from "../../context.ts";
import { sha256, type OrgCipher } from "../../crypto/index.ts";
import { DomainError, forbidden, notFound } from "../../errors.ts";
import { inTransaction } from "../../issues/store.ts";
import { actorOf } from "../../orgs/access.ts";
import { newId } from "../../orgs/index.ts";
import { meter } from "../../usage/meter.ts";
import type { LinearPerson } from "./fetch.ts";

/** Where a placeholder user's address points: a reserved domain (RFC 2606) nobody receives mail at or signs in from. */
const PLACEHOLDER_DOMAIN = "placeholder.invalid";
export const emailHash = (email: string) => sha256(email.trim().toLowerCase());

/** A placeholder's user row: history points at it until its person claims it; nobody signs in as it. */
export async function placeholderUser(tx: Db, name: string, fallback = "Imported person"): Promise<string> {
  const userId = newId();
  await tx.insert(user).values({ id: userId, name: name.slice(0, 100) || fallback, email: `ghost-${userId}@${PLACEHOLDER_DOMAIN}`, emailVerified: false });
  return userId;
}

/**
 * The user history is attributed to for a person Linear names: the one who claimed their
 * placeholder, else the placeholder itself, made on first sight. One per (org, Linear user),
 * so a re-import finds the same one.
 */
export class GhostBook {
  private readonly known = new Map<string, string>();
  constructor(
    private readonly tx: Db,
    private readonly orgId: string,
    private readonly cipher: OrgCipher,
  ) {}

  async userFor(person: LinearPerson | null): Promise<string | null> {
    if (!person) return null;
    const cached = this.known.get(person.id);
    if (cached) return cached;
    const find = () =>
      this.tx
        .select({ userId: importGhosts.userId, claimedBy: importGhosts.claimedBy })
        .from(importGhosts)
        .where(and(eq(importGhosts.orgId, this.orgId), eq(importGhosts.source, "linear"), eq(importGhosts.sourceUserId, person.id)));
    let [row] = await find();
    if (!row) {
      const id = newId();
      const userId = await placeholderUser(this.tx, person.name, "Linear user");
      const inserted = await this.tx
        .insert(importGhosts)
        .values({ id, orgId: this.orgId, source: "linear", sourceUserId: person.id, userId, emailEnc: this.cipher.encrypt(person.email), emailHash: person.email ? emailHash(person.email) : null })
        .onConflictDoNothing()
        .returning({ id: importGhosts.id });
      if (inserted.length === 0) await this.tx.delete(user).where(eq(user.id, userId));
      [row] = await find();
    }
    const attributed = row!.claimedBy ?? row!.userId;
    this.known.set(person.id, attributed);
    return attributed;
  }
}

export const claimGhostInput = z.object({ ghostId: z.string().trim().min(1, "ghostId is required").max(200) });

/**
 * "That's me": the acting person takes a placeholder's history (issues authored and assigned,
 * comments, attachments, activity) as theirs. Only once, and only when the email the source gave
 * is the person's own verified email: never matched on a name, never guessed.
 */
export async function claimGhost(ctx: Ctx, raw: z.input<typeof claimGhostInput>) {
  const { ghostId } = claimGhostInput.parse(raw);
  const actor = await actorOf(ctx);
  const orgId = ctx.principal.orgId;
  return inTransaction(ctx, async (scope) => {
    const { tx, cipher } = scope;
    const [ghost] = await tx.select().from(importGhosts).where(and(eq(importGhosts.id, ghostId), eq(importGhosts.orgId, orgId))).for("update");
    if (!ghost) throw notFound(`placeholder ${ghostId}`, "listGhosts names this org's placeholders; claim_ghost without a ghostId claims the ones carrying your email.");
    if (ghost.claimedBy) throw new DomainError("CONFLICT", "this placeholder is already claimed", "A placeholder is claimed once.", { reason: "already_claimed" });
    const [me] = await tx.select({ email: user.email, verified: user.emailVerified }).from(user).where(eq(user.id, actor.userId));
    const sourceEmail = cipher.decrypt(ghost.emailEnc);
    if (!me?.verified) throw forbidden("your email is not verified", "Verify your email, then claim again.");
    if (!sourceEmail || emailHash(sourceEmail) !== emailHash(me.email)) {
      throw new DomainError("FORBIDDEN", "this placeholder's email is not yours", "Only the person whose verified email the source gave can claim it.", { reason: "email_mismatch" });
    }
    const from = ghost.userId;
    const to = actor.userId;
    for (const [table, column] of [["issues", "author_id"], ["issues", "assignee_id"], ["comments", "author_id"], ["attachments", "author_id"], ["activity", "actor_id"]] as const) {
      await tx.execute(sql`update ${sql.identifier(table)} set ${sql.identifier(column)} = ${to} where org_id = ${orgId} and ${sql.identifier(column)} = ${from}`);
    }
    await tx.update(importGhosts).set({ claimedBy: to, claimedAt: scope.now }).where(eq(importGhosts.id, ghostId));
    await recordActivity(scope, { kind: "ghost_claimed", detail: { ghostId } });
    meter(scope, "claim_ghost");
    return { ghostId, claimedBy: to };
  });
}

/** The org's placeholders, and for each whether the acting person may claim it (their verified email matches). */
export async function listGhosts(ctx: Ctx) {
  const actor = await actorOf(ctx);
  const orgId = ctx.principal.orgId;
  const cipher = await ctx.keyring.forOrg(ctx.db, orgId);
  const [me] = await ctx.db.select({ email: user.email, verified: user.emailVerified }).from(user).where(eq(user.id, actor.userId));
  const rows = await ctx.db
    .select({ id: importGhosts.id, name: user.name, emailEnc: importGhosts.emailEnc, emailHash: importGhosts.emailHash, claimedBy: importGhosts.claimedBy, claimedAt: importGhosts.claimedAt })
    .from(importGhosts)
    .innerJoin(user, eq(user.id, importGhosts.userId))
    .where(eq(importGhosts.orgId, orgId));
  const mine = me?.verified ? emailHash(me.email) : null;
  return rows.map((r) => ({
    ghostId: r.id,
    name: r.name,
    email: cipher.decrypt(r.emailEnc),
    claimedBy: r.claimedBy,
    claimedAt: r.claimedAt?.toISOString() ?? null,
    claimable: !r.claimedBy && mine !== null && r.emailHash === mine,
  }));
}

export const claimGhostsInput = z.object({
  ghostId: z.string().trim().min(1).max(200).optional().describe("one placeholder, as the Dash lists them"),
});

/**
 * claim_ghost's one call: the placeholder named, or, without a ghostId, every unclaimed one
 * whose source email is the caller's verified email (the same check claimGhost makes, so nothing
 * is guessed). None to claim is NOT_FOUND with what to do.
 */
export async function claimGhosts(ctx: Ctx, raw: z.input<typeof claimGhostsInput>) {
  const { ghostId } = claimGhostsInput.parse(raw);
  const ids = ghostId ? [ghostId] : (await listGhosts(ctx)).filter((g) => g.claimable).map((g) => g.ghostId);
  if (ids.length === 0) {
    throw notFound("an unclaimed placeholder with your verified email", "Imported people are matched on the email the source gave; if yours differs, ask an owner, or verify this email first.");
  }
  const claimed = [];
  for (const id of ids) claimed.push(await claimGhost(ctx, { ghostId: id }));
  return { claimed: claimed.map((c) => c.ghostId), claimedBy: claimed[0]!.claimedBy };
}
