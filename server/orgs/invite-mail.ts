import { and, eq } from "drizzle-orm";
import type { z } from "zod";
import { invites, orgs, user } from "../../db/schema/index.ts";
import { emailConfigured, sendEmail } from "../outbound/email.ts";
import { admitMail } from "../outbound/mail-limit.ts";
import { SendFailure } from "../outbound/failure.ts";
import type { Ctx } from "../context.ts";
import { sha256 } from "../crypto/index.ts";
import { DomainError, notFound } from "../errors.ts";
import { actorOf, requireRole } from "./access.ts";
import { refuseWhileFrozen } from "./freeze.ts";
import { createInvite, createInviteInput, inviteCodeSchema, stateOf } from "./invites.ts";

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

/**
 * Mails an email-bound invite's link to its address, once, when SMTP_URL and SMTP_FROM are set
 * (owner or admin; the door that minted the invite calls it with the link it built). Without
 * SMTP, when the mail server refuses, or when the address (or the inviter's client) has had its
 * share of mail this hour (server/outbound/mail-limit.ts), it says so and the inviter sends the
 * link themselves.
 */
export async function emailInvite(ctx: Ctx, input: { inviteId: string; link: string }, door: { clientAddress: string | null } = { clientAddress: null }): Promise<{ emailed: boolean; reason: string | null }> {
  refuseWhileFrozen(ctx.principal);
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
