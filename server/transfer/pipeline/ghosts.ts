import { and, asc, eq, inArray, isNull, sql } from "drizzle-orm";
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
import type { SourcePerson } from "./stream.ts";

/** Where a placeholder user's address points: a reserved domain (RFC 2606) nobody receives mail at or signs in from. */
const PLACEHOLDER_DOMAIN = "placeholder.invalid";
export const emailHash = (email: string) => sha256(email.trim().toLowerCase());

/** A placeholder's user row: history points at it until its person claims it; nobody signs in as it. */
export async function placeholderUser(tx: Db, name: string, fallback = "Imported person"): Promise<string> {
  const userId = newId();
  await tx.insert(user).values(placeholderRow(userId, name, fallback));
  return userId;
}

const placeholderRow = (userId: string, name: string, fallback: string) => ({ id: userId, name: name.slice(0, 100) || fallback, email: `ghost-${userId}@${PLACEHOLDER_DOMAIN}`, emailVerified: false });

/**
 * The user history is attributed to for a person a source names: the one who claimed their
 * placeholder, else the placeholder itself, made on first sight. One per (org, source, person),
 * so a re-import finds the same one. A page's people are resolved at once (`resolve`), in a
 * few multi-row statements; `known` then answers for each of them.
 */
export class GhostBook {
  private readonly attributed = new Map<string, string>();
  /** Placeholders this book made (the run's report counts them). */
  made = 0;
  constructor(
    private readonly tx: Db,
    private readonly orgId: string,
    private readonly cipher: OrgCipher,
    private readonly source: string,
  ) {}

  /** The people not attributed yet, by source id, for a caller that reads their placeholders in a statement of its own (`attribute`, then `resolve(…, true)`). */
  unknown(people: (SourcePerson | null)[]): string[] {
    return [...new Set(people.filter((p): p is SourcePerson => p !== null && !this.attributed.has(p.id)).map((p) => p.id))];
  }

  /** Placeholders read by the caller: each person's user (who claimed it, else the placeholder). */
  attribute(rows: { sourceUserId: string; userId: string; claimedBy: string | null }[]): void {
    for (const r of rows) this.attributed.set(r.sourceUserId, r.claimedBy ?? r.userId);
  }

  /** `looked`: the caller has read the placeholders of `unknown(people)` already (`attribute`); only the missing ones are made. */
  async resolve(people: (SourcePerson | null)[], looked = false): Promise<void> {
    const wanted = new Map(people.filter((p): p is SourcePerson => p !== null && !this.attributed.has(p.id)).map((p) => [p.id, p]));
    if (wanted.size === 0) return;
    const find = async (ids: string[]) => {
      const rows = await this.tx
        .select({ sourceUserId: importGhosts.sourceUserId, userId: importGhosts.userId, claimedBy: importGhosts.claimedBy })
        .from(importGhosts)
        .where(and(eq(importGhosts.orgId, this.orgId), eq(importGhosts.source, this.source), inArray(importGhosts.sourceUserId, ids)));
      this.attribute(rows);
    };
    if (!looked) await find([...wanted.keys()]);
    const missing = [...wanted.values()].filter((p) => !this.attributed.has(p.id));
    if (missing.length === 0) return;
    const made = missing.map((p) => ({ person: p, userId: newId() }));
    await this.tx.insert(user).values(made.map((m) => placeholderRow(m.userId, m.person.name, `${this.source.charAt(0).toUpperCase()}${this.source.slice(1)} user`)));
    const inserted = await this.tx
      .insert(importGhosts)
      .values(made.map(({ person, userId }) => ({ id: newId(), orgId: this.orgId, source: this.source, sourceUserId: person.id, userId, emailEnc: this.cipher.encrypt(person.email), emailHash: person.email ? emailHash(person.email) : null })))
      .onConflictDoNothing()
      .returning({ userId: importGhosts.userId });
    this.made += inserted.length;
    // Another run made some of them first: their rows win, ours go.
    const kept = new Set(inserted.map((r) => r.userId));
    const lost = made.filter((m) => !kept.has(m.userId)).map((m) => m.userId);
    if (lost.length > 0) await this.tx.delete(user).where(inArray(user.id, lost));
    await find(missing.map((p) => p.id));
  }

  /** The user for a person `resolve` has seen. */
  known(person: SourcePerson | null): string | null {
    return person ? this.attributed.get(person.id)! : null;
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
    if (!ghost) throw notFound(`placeholder ${ghostId}`, "list_claimable_ghosts names the placeholders you may claim; claim_ghost without a ghostId claims them.");
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
  ghostId: z.string().trim().min(1).max(200).optional().describe("from list_claimable_ghosts"),
});

/**
 * claim_ghost's one call: the placeholder named, or, without a ghostId, every one offered to the
 * caller (claimableGhosts: their verified email, not dismissed; the same check claimGhost makes, so
 * nothing is guessed). None to claim is NOT_FOUND with what to do.
 */
export async function claimGhosts(ctx: Ctx, raw: z.input<typeof claimGhostsInput>) {
  const { ghostId } = claimGhostsInput.parse(raw);
  const ids = ghostId ? [ghostId] : (await offeredGhosts(ctx)).map((g) => g.ghostId);
  if (ids.length === 0) {
    throw notFound(
      "an unclaimed placeholder with your verified email",
      "Imported people are matched on the email the source gave; if yours differs, ask an owner, or verify this email first. " +
        "One you dismissed is claimed by its ghostId (list_claimable_ghosts).",
    );
  }
  const claimed = [];
  for (const id of ids) claimed.push(await claimGhost(ctx, { ghostId: id }));
  return { claimed: claimed.map((c) => c.ghostId), claimedBy: claimed[0]!.claimedBy };
}

/**
 * The placeholders the caller's human could claim: unclaimed, carrying their verified email (the
 * check claimGhost makes), each saying whether they dismissed it (dismiss_ghost_prompt: it is
 * offered no more, and claim_ghost without a ghostId leaves it). Oldest first, at most 100: one
 * person is rarely more than a few. `verified` false: their email is not verified, so none can be.
 */
export async function claimableGhosts(ctx: Ctx) {
  const { userId, orgId } = ctx.principal;
  const [me] = userId ? await ctx.db.select({ email: user.email, verified: user.emailVerified }).from(user).where(eq(user.id, userId)) : [];
  if (!me?.verified) return { verified: false, ghosts: [] };
  const rows = await ctx.db
    .select({
      ghostId: importGhosts.id,
      name: user.name,
      source: importGhosts.source,
      importedAt: importGhosts.createdAt,
      dismissed: sql<boolean>`${userId} = any(${importGhosts.dismissedBy})`,
    })
    .from(importGhosts)
    .innerJoin(user, eq(user.id, importGhosts.userId))
    .where(and(eq(importGhosts.orgId, orgId), isNull(importGhosts.claimedBy), eq(importGhosts.emailHash, emailHash(me.email))))
    .orderBy(asc(importGhosts.createdAt), asc(importGhosts.id))
    .limit(100);
  return { verified: true, ghosts: rows.map((r) => ({ ...r, importedAt: r.importedAt.toISOString() })) };
}

/** The claimable placeholders the caller's human has not dismissed: what setup_status and claim_ghost offer. */
export const offeredGhosts = async (ctx: Ctx) => (await claimableGhosts(ctx)).ghosts.filter((g) => !g.dismissed);
