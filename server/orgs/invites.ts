import { and, asc, desc, eq, gt, isNotNull, isNull, or, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { invites, members, orgs, projects, user } from "../../db/schema/index.ts";
import { emailConfigured, sendEmail } from "../outbound/email.ts";
import { admitMail } from "../outbound/mail-limit.ts";
import { SendFailure } from "../outbound/failure.ts";
import type { Ctx, Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { randomToken, sha256 } from "../crypto/index.ts";
import { DomainError, forbidden, notFound } from "../errors.ts";
import { decodeCursor, encodeCursor, fitting, pageArgs } from "../paging.ts";
import { actorOf, humanPrincipal, recordOrgActivity, requireRole } from "./access.ts";
import { emailSchema, newId } from "./index.ts";
import { checkScope, projectIdsSchema } from "./scope.ts";
import { transactionWithNotices } from "../events/index.ts";

/**
 * Invites: single-use `rtscinv_...` codes that add a person to an org as a member or admin.
 * Only the code's SHA-256 is stored; the code is shown once, to whoever minted it. An invite
 * either names an email, and then only the person signed in with that address redeems it,
 * or is open: whoever holds the code (decision 028).
 */
export const INVITE_PREFIX = "rtscinv_";
export const DEFAULT_INVITE_DAYS = 7;
const DAY_MS = 86_400_000;

export const createInviteInput = z.object({
  expiresDays: z.number().int().min(1, "an invite lasts 1 to 30 days").max(30, "an invite lasts 1 to 30 days").default(DEFAULT_INVITE_DAYS),
  /** What the person joins as; only an owner invites an admin (as only an owner makes one). */
  role: z.enum(["member", "admin"], { error: "an invite makes a member or an admin" }).default("member"),
  /** Who may redeem it; empty or absent for an open invite. */
  email: z.preprocess((v) => (typeof v === "string" ? v.trim().toLowerCase() || undefined : v), emailSchema.optional()),
  /** The projects the member it makes is scoped to; absent or null for every project (./scope.ts). */
  projectIds: projectIdsSchema.optional(),
});
export const inviteIdInput = z.object({ inviteId: z.string().trim().min(1, "inviteId is required").max(100) });
export const inviteCodeSchema = z
  .string()
  .trim()
  .transform((value) => extractInviteCode(value))
  .pipe(z.string().regex(/^rtscinv_[A-Za-z0-9_-]{16,100}$/, "an invite code looks like rtscinv_… (or a link ending in one)"));

/** Accepts the bare code or any link that carries it (…/join/rtscinv_…, ?code=rtscinv_…). */
export function extractInviteCode(value: string): string {
  const match = /rtscinv_[A-Za-z0-9_-]+/.exec(value);
  return match ? match[0] : value;
}

export type InviteState = "pending" | "accepted" | "revoked" | "expired";

function stateOf(row: { acceptedAt: Date | null; revokedAt: Date | null; expiresAt: Date }, now: Date): InviteState {
  if (row.acceptedAt) return "accepted";
  if (row.revokedAt) return "revoked";
  if (row.expiresAt <= now) return "expired";
  return "pending";
}

/** Mints an invite (owner or admin). Returns the code once. Free, on every door: membership is never metered (decision 052). */
export async function createInvite(ctx: Ctx, raw: z.input<typeof createInviteInput> = {}) {
  const { expiresDays, role, email, projectIds } = createInviteInput.parse(raw);
  return transactionWithNotices(ctx.db, async (tx) => {
    const actor = await actorOf(ctx, tx);
    requireRole(actor, role === "admin" ? ["owner"] : ["owner", "admin"], role === "admin" ? "inviting an admin" : "inviting people");
    const scope = await checkScope(tx, ctx.principal.orgId, role, projectIds ?? null);
    const code = randomToken(INVITE_PREFIX, 24);
    const inviteId = newId();
    const expiresAt = new Date(ctx.clock.now().getTime() + expiresDays * DAY_MS);
    await tx.insert(invites).values({
      id: inviteId,
      orgId: ctx.principal.orgId,
      codeHash: sha256(code),
      role,
      email: email ?? null,
      projectIds: scope,
      createdBy: ctx.principal.userId,
      createdAt: ctx.clock.now(),
      expiresAt,
    });
    await recordOrgActivity(ctx, tx, "invite.created", { inviteId, role, bound: email !== undefined, projectIds: scope, expiresAt: expiresAt.toISOString() });
    return { inviteId, code, role, email: email ?? null, projectIds: scope, expiresAt: expiresAt.toISOString() };
  });
}

/**
 * Mints an invite and, when it names an email, mails its link (emailInvite): what the Dash's
 * invite form and the invite_member tool do. `baseUrl` is where people reach this server.
 */
export async function inviteAndMail(ctx: Ctx, raw: z.input<typeof createInviteInput>, door: { baseUrl: string; clientAddress: string | null }) {
  const invite = await createInvite(ctx, raw);
  const link = `${door.baseUrl}/join/${invite.code}`;
  const mail = invite.email ? await emailInvite(ctx, { inviteId: invite.inviteId, link }, door) : null;
  return { ...invite, link, mail };
}

export const listInvitesInput = z.object(pageArgs);

/** Where a page of invites ends: the last invite's creation (to the microsecond, as stored) and id. */
const invitePosition = z.object({ t: z.string().max(40), i: z.string().max(100) });

/**
 * The org's invites with their state (owner or admin), newest first, a page at a time read as one
 * keyset range (at most `limit`, default 200, and REPLY_BUDGET_BYTES), with `nextCursor` while
 * more follow. A spent invite has no expiry to show.
 */
export async function listInvites(ctx: Ctx, raw: z.input<typeof listInvitesInput> = {}) {
  const input = listInvitesInput.parse(raw);
  const limit = input.limit ?? 200;
  const after = decodeCursor(input.cursor, invitePosition);
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "listing invites");
  const now = ctx.clock.now();
  const rows = await ctx.db
    .select({
      inviteId: invites.id,
      role: invites.role,
      email: invites.email,
      projectIds: invites.projectIds,
      emailedAt: invites.emailedAt,
      createdAt: invites.createdAt,
      expiresAt: invites.expiresAt,
      acceptedAt: invites.acceptedAt,
      revokedAt: invites.revokedAt,
      acceptedByEmail: user.email,
      position: sql<string>`${invites.createdAt}::text`,
    })
    .from(invites)
    .leftJoin(user, eq(user.id, invites.acceptedBy))
    .where(
      and(
        eq(invites.orgId, ctx.principal.orgId),
        after ? sql`(${invites.createdAt}, ${invites.id}) < (${after.t}::timestamptz, ${after.i})` : undefined,
      ),
    )
    .orderBy(desc(invites.createdAt), desc(invites.id))
    .limit(limit + 1);
  const views = rows.slice(0, limit).map((r) => {
    const state = stateOf(r, now);
    return {
      inviteId: r.inviteId,
      role: r.role,
      email: r.email,
      projectIds: r.projectIds,
      emailedAt: r.emailedAt?.toISOString() ?? null,
      state,
      createdAt: r.createdAt.toISOString(),
      expiresAt: state === "pending" || state === "expired" ? r.expiresAt.toISOString() : null,
      acceptedAt: r.acceptedAt?.toISOString() ?? null,
      acceptedBy: r.acceptedByEmail ?? null,
      revokedAt: r.revokedAt?.toISOString() ?? null,
    };
  });
  const page = views.slice(0, fitting(views.map((v) => JSON.stringify(v).length)));
  const last = rows[page.length - 1];
  return { invites: page, ...(rows.length > page.length && last ? { nextCursor: encodeCursor({ t: last.position, i: last.inviteId }) } : {}) };
}

/** Voids a pending invite (owner or admin). */
export async function revokeInvite(ctx: Ctx, raw: z.input<typeof inviteIdInput>) {
  const { inviteId } = inviteIdInput.parse(raw);
  return transactionWithNotices(ctx.db, async (tx) => {
    const actor = await actorOf(ctx, tx);
    requireRole(actor, ["owner", "admin"], "revoking invites");
    const now = ctx.clock.now();
    const rows = await tx.select().from(invites).where(and(eq(invites.orgId, ctx.principal.orgId), eq(invites.id, inviteId)));
    const invite = rows[0];
    if (!invite) throw notFound(`invite ${inviteId}`, "List invites with list_invites (or `retasc members list`).");
    const state = stateOf(invite, now);
    if (state === "revoked") return { inviteId, state, changed: false };
    if (state !== "pending") {
      throw new DomainError("CONFLICT", `invite ${inviteId} is ${state}; only a pending invite can be revoked`, "Nothing to do.");
    }
    await tx
      .update(invites)
      .set({ revokedAt: now, revokedBy: ctx.principal.userId })
      .where(and(eq(invites.id, inviteId), isNull(invites.acceptedAt), isNull(invites.revokedAt)));
    await recordOrgActivity(ctx, tx, "invite.revoked", { inviteId });
    return { inviteId, state: "revoked" as const, changed: true };
  });
}

/**
 * Redeems an invite for a signed-in person: they become a member of the org. The code is
 * consumed with one conditional UPDATE, so of any number of concurrent redemptions exactly
 * one succeeds. A used, revoked or expired code is refused with its reason.
 */
export async function redeemInvite(services: Services, input: { userId: string; code: string; via?: Via }) {
  const code = inviteCodeSchema.parse(input.code);
  const codeHash = sha256(code);
  return transactionWithNotices(services.db, async (tx) => {
    const found = await tx
      .select({ invite: invites, orgName: orgs.name })
      .from(invites)
      .innerJoin(orgs, eq(orgs.id, invites.orgId))
      .where(eq(invites.codeHash, codeHash));
    const row = found[0];
    if (!row) throw notFound("invite code", "Check the code, or ask an owner or admin for a new invite.");
    return redeem(services, tx, row, input.userId, input.via ?? "cli");
  });
}

type Via = "dash" | "cli" | "mcp";

/** The one redemption, by code or by id: the invitee check, the conditional spend, the membership. */
async function redeem(services: Services, tx: Db, row: { invite: typeof invites.$inferSelect; orgName: string }, userId: string, via: Via) {
  const now = services.clock.now();
  const { invite, orgName } = row;
  if (invite.email) await requireInvitee(tx, invite, userId);
  const existing = await tx
    .select({ id: members.id, status: members.status, role: members.role })
    .from(members)
    .where(and(eq(members.orgId, invite.orgId), eq(members.userId, userId)));
  if (existing[0]?.status === "suspended") {
    throw forbidden(`your membership of ${orgName} is suspended`, "Ask an owner or admin of the org to reactivate you.");
  }
  if (existing[0]) {
    throw new DomainError("CONFLICT", `you are already a member of ${orgName}`, "Nothing to redeem; bind a folder with `retasc bind`.", {
      orgId: invite.orgId,
    });
  }
  const taken = await tx
    .update(invites)
    .set({ acceptedAt: now, acceptedBy: userId })
    .where(and(eq(invites.id, invite.id), isNull(invites.acceptedAt), isNull(invites.revokedAt), gt(invites.expiresAt, now)))
    .returning({ id: invites.id });
  if (taken.length === 0) {
    // Re-read: a concurrent redemption may have spent it since the first read.
    const current = (await tx.select().from(invites).where(eq(invites.id, invite.id)))[0]!;
    throw refusal(stateOf(current, now), current);
  }
  const memberId = newId();
  await tx.insert(members).values({ id: memberId, orgId: invite.orgId, userId, role: invite.role, projectIds: invite.projectIds });
  const ctx = withPrincipal(services, humanPrincipal(invite.orgId, userId, via, invite.projectIds));
  await recordOrgActivity(ctx, tx, "invite.accepted", { inviteId: invite.id, memberId });
  await services.events.publish(tx, { orgId: invite.orgId, kind: "member.joined", memberId });
  return { orgId: invite.orgId, orgName, memberId, role: invite.role, projectIds: invite.projectIds };
}

/**
 * The pending invites addressed to the caller's human that they may redeem: bound to their
 * address and proven theirs as requireInvitee asks (verified, or mailed the link), to orgs they
 * are not in yet. Names nothing of an invite whose address is not proven the person's.
 */
function pendingForUser(services: Pick<Services, "db" | "clock">, userId: string) {
  const now = services.clock.now();
  return services.db
    .select({ invite: invites, orgName: orgs.name })
    .from(invites)
    .innerJoin(orgs, eq(orgs.id, invites.orgId))
    .innerJoin(user, eq(user.id, userId))
    .where(
      and(
        sql`${invites.email} = lower(${user.email})`,
        or(eq(user.emailVerified, true), isNotNull(invites.emailedAt)),
        isNull(invites.acceptedAt),
        isNull(invites.revokedAt),
        gt(invites.expiresAt, now),
        sql`not exists (select 1 from ${members} m where m.org_id = ${invites.orgId} and m.user_id = ${userId})`,
      ),
    )
    .orderBy(desc(invites.createdAt), desc(invites.id))
    .limit(20);
}

/** What whoami lists: the caller's human's pending invites (for accept_invite). */
export async function pendingInvites(ctx: Ctx) {
  if (!ctx.principal.userId) return [];
  const rows = await pendingForUser(ctx, ctx.principal.userId);
  return rows.map(({ invite, orgName }) => ({ inviteId: invite.id, orgName, role: invite.role, expiresAt: invite.expiresAt.toISOString() }));
}

/**
 * Accepts one of the caller's human's own pending invites (whoami lists them) on their behalf:
 * they join that org, as if they had opened the link. An invite for anyone else, or open (no
 * address: its code is the credential, and an agent holds none), is NOT_FOUND.
 */
export async function acceptInvite(ctx: Ctx, raw: z.input<typeof inviteIdInput>) {
  const { inviteId } = inviteIdInput.parse(raw);
  const userId = ctx.principal.userId;
  const hint = "Your human's pending invites are listed by whoami (pendingInvites).";
  if (!userId) throw notFound(`invite ${inviteId}`, hint);
  return transactionWithNotices(ctx.db, async (tx) => {
    const [row] = await tx
      .select({ invite: invites, orgName: orgs.name })
      .from(invites)
      .innerJoin(orgs, eq(orgs.id, invites.orgId))
      .innerJoin(user, eq(user.id, userId))
      .where(and(eq(invites.id, inviteId), sql`${invites.email} = lower(${user.email})`));
    if (!row) throw notFound(`invite ${inviteId}`, hint);
    return redeem(ctx, tx, row, userId, "mcp");
  });
}

/**
 * What invite_member asks before it invites (owner or admin): whose address, as what role (admin
 * only when the caller is an owner, who alone invites one), and for a member which projects. The
 * agent puts these to its human and calls again with the answers and decided:true.
 */
export async function inviteQuestions(ctx: Ctx) {
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "inviting people");
  const [org] = await ctx.db.select({ name: orgs.name }).from(orgs).where(eq(orgs.id, ctx.principal.orgId));
  const orgProjects = await ctx.db
    .select({ id: projects.id, prefix: projects.prefix, name: projects.name })
    .from(projects)
    .where(eq(projects.orgId, ctx.principal.orgId))
    .orderBy(asc(projects.prefix))
    .limit(maxProjectOptions + 1);
  const resume = (arg: string) => ({ tool: "invite_member", arg });
  const context = `Inviting a person to ${org!.name}. Ask your human; call invite_member again with their answers and decided:true.`;
  const questions: AskHuman[] = [
    {
      question: "Who is the invite for? Their email address; only the person signed in with it can join.",
      context,
      input: "text",
      hint: "Leave it empty for an open invite: a link anyone holding it can use once.",
      resume: resume("email"),
    },
  ];
  if (actor.role === "owner") {
    questions.push({
      question: "Join as?",
      options: [
        { value: "member", label: "Member", detail: "works on issues; manages their own keys" },
        { value: "admin", label: "Admin", detail: "also invites, suspends members, manages keys, connectors and projects" },
      ],
      resume: resume("role"),
    });
  }
  if (orgProjects.length > 1) {
    questions.push({
      question: "Which projects may a member see? (Admins see every project.)",
      options: [
        { value: allProjects, label: "Every project", detail: "now and later" },
        ...orgProjects.slice(0, maxProjectOptions).map((p) => ({ value: p.id, label: `${p.prefix}: ${p.name}` })),
      ],
      multiple: true,
      hint: `${allProjects}: leave projectIds out.${orgProjects.length > maxProjectOptions ? " More projects: their ids are in list_projects." : ""}`,
      resume: resume("projectIds"),
    });
  }
  return questions;
}
const allProjects = "__all__";
const maxProjectOptions = 20;

/** A question an agent puts to its human as it stands, then answers by calling `resume.tool` with `resume.arg` set. */
export interface AskHuman {
  question: string;
  context?: string;
  options?: { value: string; label: string; detail?: string }[];
  multiple?: boolean;
  input?: "text";
  hint?: string;
  resume: { tool: string; arg: string };
}

/**
 * An email-bound invite is redeemed only by the person signed in with that address, proven:
 * verified (by GitHub or Google, or made by the operator), or reached by this server's mail of
 * the link, which is the proof a verification mail would be. An email + password account is
 * recorded unverified, so it redeems a bound invite only when the invite was mailed.
 */
async function requireInvitee(tx: Pick<Ctx["db"], "select">, invite: { email: string | null; emailedAt: Date | null }, userId: string) {
  const [person] = await tx.select({ email: user.email, verified: user.emailVerified }).from(user).where(eq(user.id, userId));
  const hint = "Sign in with the address the invite was sent to, or ask an owner or admin for an invite to yours.";
  if (!person || person.email.toLowerCase() !== invite.email) {
    throw new DomainError("FORBIDDEN", `this invite is for ${invite.email}, and you are signed in as ${person?.email ?? "someone else"}`, hint, { reason: "email_mismatch" });
  }
  if (!person.verified && !invite.emailedAt) {
    throw new DomainError(
      "FORBIDDEN",
      `nothing proves ${invite.email} is yours: the account's email is not verified and this server did not mail the invite`,
      "Sign in with GitHub or Google under that address, or ask for an open invite (one without an email).",
      { reason: "email_unverified" },
    );
  }
}

/**
 * Mails an email-bound invite's link to its address, once, when SMTP_URL and SMTP_FROM are set
 * (owner or admin; the door that minted the invite calls it with the link it built). Without
 * SMTP, when the mail server refuses, or when the address (or the inviter's client) has had its
 * share of mail this hour (server/outbound/mail-limit.ts), it says so and the inviter sends the
 * link themselves.
 */
export async function emailInvite(ctx: Ctx, input: { inviteId: string; link: string }, door: { clientAddress: string | null } = { clientAddress: null }): Promise<{ emailed: boolean; reason: string | null }> {
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "inviting people");
  const [row] = await ctx.db
    .select({ invite: invites, orgName: orgs.name, inviter: user.name })
    .from(invites)
    .innerJoin(orgs, eq(orgs.id, invites.orgId))
    .leftJoin(user, eq(user.id, invites.createdBy))
    .where(and(eq(invites.orgId, ctx.principal.orgId), eq(invites.id, input.inviteId)));
  if (!row) throw notFound(`invite ${input.inviteId}`, "List invites with `retasc members list`.");
  const { invite } = row;
  if (!invite.email) throw new DomainError("INVALID_INPUT", "this invite names no email", "Mint an invite with an email to have it mailed.");
  // Only the invite's own link is mailed: never a link to somewhere else under its name.
  if (sha256(inviteCodeSchema.parse(input.link)) !== invite.codeHash) throw new DomainError("INVALID_INPUT", "that link is not this invite's", "Mail the link the invite was minted with.");
  if (stateOf(invite, ctx.clock.now()) !== "pending") throw new DomainError("CONFLICT", "only a pending invite is mailed", "Mint a new invite.");
  if (invite.emailedAt) return { emailed: true, reason: null };
  if (!emailConfigured(ctx.config)) return { emailed: false, reason: "email is not configured on this server (SMTP_URL, SMTP_FROM)" };
  const as = invite.role === "admin" ? "an admin" : "a member";
  try {
    await admitMail(ctx.config, invite.email, door.clientAddress);
  } catch (error) {
    // The invite stands; the inviter sends its link themselves.
    if (error instanceof DomainError) return { emailed: false, reason: `${error.message}: ${error.hint}` };
    throw error;
  }
  try {
    await sendEmail(ctx.config, invite.email, {
      subject: `${row.inviter ?? "Someone"} invited you to ${row.orgName} on Retasc`,
      text:
        `${row.inviter ?? "Someone"} invited you to join ${row.orgName} on Retasc as ${as}.\n\n` +
        `Open this link, sign in or create an account as ${invite.email}, and join:\n${input.link}\n\n` +
        `It works once and expires ${invite.expiresAt.toISOString().slice(0, 16).replace("T", " ")} UTC. Not expecting it? Ignore this mail.\n`,
      messageId: `<invite.${invite.id}@retasc>`,
    });
  } catch (error) {
    if (error instanceof SendFailure) return { emailed: false, reason: error.reason };
    throw error;
  }
  await ctx.db.update(invites).set({ emailedAt: ctx.clock.now() }).where(eq(invites.id, invite.id));
  return { emailed: true, reason: null };
}

function refusal(state: InviteState, invite: { expiresAt: Date; acceptedAt: Date | null; revokedAt: Date | null }) {
  const hint = "Ask an owner or admin of the org for a new invite.";
  switch (state) {
    case "accepted":
      return new DomainError("CONFLICT", "this invite was already used; invite codes work once", hint, { reason: "used" });
    case "revoked":
      return new DomainError("FORBIDDEN", "this invite was revoked", hint, { reason: "revoked" });
    case "expired":
      return new DomainError("FORBIDDEN", `this invite expired on ${invite.expiresAt.toISOString().slice(0, 10)}`, hint, {
        reason: "expired",
      });
    default:
      return new DomainError("CONFLICT", "this invite could not be redeemed; try again", hint);
  }
}

/** What an invite code leads to, for the join page; never spends it. */
export async function describeInvite(services: Pick<Services, "db" | "clock">, rawCode: string) {
  const parsed = inviteCodeSchema.safeParse(rawCode);
  if (!parsed.success) return null;
  const rows = await services.db
    .select({ invite: invites, orgName: orgs.name })
    .from(invites)
    .innerJoin(orgs, eq(orgs.id, invites.orgId))
    .where(eq(invites.codeHash, sha256(parsed.data)));
  const row = rows[0];
  if (!row) return null;
  return { orgName: row.orgName, role: row.invite.role, email: row.invite.email, state: stateOf(row.invite, services.clock.now()), code: parsed.data };
}
