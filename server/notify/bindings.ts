import crypto from "node:crypto";
import { and, desc, eq, gt, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../../db/client.ts";
import { notifyBindings, notifyChannels, notifyCodes, notifyDeliveries, notifyMutes, notifySlackInstalls, type NotifyChannel } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../context.ts";
import { DomainError, invalidInput } from "../errors.ts";
import { transactionWithNotices } from "../events/index.ts";
import { enqueue } from "../outbox/index.ts";
import { actorOf } from "../orgs/access.ts";
import { addressLabel, type Address, type Addresses } from "./channels.ts";
import { kindDescriptions, mutableKinds } from "./kinds.ts";
import { emailConfigured, sendEmail } from "../outbound/email.ts";
import { refuseWhileFrozen } from "../orgs/freeze.ts";
import { admitMail } from "../outbound/mail-limit.ts";

/** A connect code lives 15 minutes and works once. */
export const CODE_TTL_MS = 15 * 60_000;
/** Wrong email codes before the code is void. */
const EMAIL_CODE_ATTEMPTS = 5;

const hashCode = (code: string) => crypto.createHash("sha256").update(code).digest("hex");
/** The 6-digit email code is hashed with its person, so two people's equal codes never collide. */
const emailCodeHash = (orgId: string, userId: string, code: string) => hashCode(`email:${orgId}:${userId}:${code}`);

/** Which channels this server can use: each needs its credentials in the configuration. */
export function configuredChannels(config: Services["config"]): Record<NotifyChannel, boolean> {
  return {
    telegram: Boolean(config.TELEGRAM_BOT_TOKEN && config.TELEGRAM_BOT_USERNAME && config.TELEGRAM_WEBHOOK_SECRET),
    email: emailConfigured(config),
    slack: Boolean(config.SLACK_CLIENT_ID && config.SLACK_CLIENT_SECRET && config.SLACK_SIGNING_SECRET),
    discord: Boolean(config.DISCORD_BOT_TOKEN && config.DISCORD_PUBLIC_KEY),
  };
}

function requireConfigured(ctx: Ctx, channel: NotifyChannel) {
  if (!configuredChannels(ctx.config)[channel]) {
    throw new DomainError("UNAVAILABLE", `${channel} notifications are not set up on this server`, "Ask whoever runs Retasc to configure it (docs/notifications).");
  }
}

/** The acting person; `writes` (every caller but the settings' read) refuses a frozen org's first (decision 110). */
async function person(ctx: Ctx, writes = true): Promise<{ orgId: string; userId: string }> {
  if (writes) refuseWhileFrozen(ctx.principal);
  const actor = await actorOf(ctx);
  if (ctx.principal.kind !== "human") throw new DomainError("FORBIDDEN", "notification settings are a person's own", "Open the Dash Notifications page.");
  return { orgId: actor.orgId, userId: actor.userId };
}

export const connectInput = z.object({ channel: z.enum(["telegram", "slack", "discord"]) }).strict();

/**
 * A single-use code for the person to hand to a bot: in the Telegram deep link, or after
 * `/retasc connect` (Slack) and `/connect` (Discord). Earlier unused codes of theirs stay valid until they expire.
 */
export async function startConnect(ctx: Ctx, raw: z.input<typeof connectInput>) {
  const { channel } = connectInput.parse(raw);
  requireConfigured(ctx, channel);
  const me = await person(ctx);
  if (channel === "slack") {
    const [install] = await ctx.db.select({ orgId: notifySlackInstalls.orgId }).from(notifySlackInstalls).where(eq(notifySlackInstalls.orgId, me.orgId));
    if (!install) throw new DomainError("UNAVAILABLE", "the Slack app is not installed for this org", "Ask an owner or admin to add it to Slack from this page first.");
  }
  const code = crypto.randomBytes(18).toString("base64url");
  const expiresAt = new Date(ctx.clock.now().getTime() + CODE_TTL_MS);
  await ctx.db.insert(notifyCodes).values({ codeHash: hashCode(code), orgId: me.orgId, userId: me.userId, channel, expiresAt });
  const link = channel === "telegram" ? `https://t.me/${ctx.config.TELEGRAM_BOT_USERNAME}?start=${code}` : null;
  return { channel, code, link, expiresAt: expiresAt.toISOString() };
}

/** Uses a connect code once, if it is for `channel` and not expired: whose it is. */
export async function consumeCode(db: Db, channel: NotifyChannel, code: string, now: Date): Promise<{ orgId: string; userId: string } | null> {
  if (!/^[A-Za-z0-9_-]{16,64}$/.test(code)) return null;
  const [used] = await db
    .update(notifyCodes)
    .set({ usedAt: now })
    .where(and(eq(notifyCodes.codeHash, hashCode(code)), eq(notifyCodes.channel, channel), isNull(notifyCodes.usedAt), gt(notifyCodes.expiresAt, now)))
    .returning({ orgId: notifyCodes.orgId, userId: notifyCodes.userId });
  return used ?? null;
}

/** Binds (or rebinds) a person's channel to an address; a broken binding is mended. */
export async function bindChannel<C extends NotifyChannel>(
  services: Services,
  db: Db,
  owner: { orgId: string; userId: string },
  channel: C,
  address: Addresses[C],
  status: "active" | "pending" = "active",
): Promise<void> {
  const addressEnc = (await services.keyring.forOrg(db, owner.orgId)).encrypt(JSON.stringify(address));
  await db
    .insert(notifyBindings)
    .values({ id: crypto.randomUUID(), orgId: owner.orgId, userId: owner.userId, channel, addressEnc, status })
    .onConflictDoUpdate({
      target: [notifyBindings.orgId, notifyBindings.userId, notifyBindings.channel],
      set: { addressEnc, status, brokenReason: null, updatedAt: sql`now()` },
    });
}

export const emailInput = z.object({ email: z.email().max(254) }).strict();

/**
 * Starts connecting an email address: the binding waits (pending) for the 6-digit code
 * mailed to it, so nobody can send Retasc mail to an address they do not read. How many codes
 * one address, or one client, gets an hour is limited (server/outbound/mail-limit.ts).
 */
export async function startEmail(ctx: Ctx, raw: z.input<typeof emailInput>, door: { clientAddress: string | null } = { clientAddress: null }) {
  const { email } = emailInput.parse(raw);
  requireConfigured(ctx, "email");
  const me = await person(ctx);
  await admitMail(ctx.config, email, door.clientAddress);
  const code = String(crypto.randomInt(0, 1_000_000)).padStart(6, "0");
  const expiresAt = new Date(ctx.clock.now().getTime() + CODE_TTL_MS);
  await ctx.db.transaction(async (tx) => {
    await tx.delete(notifyCodes).where(and(eq(notifyCodes.orgId, me.orgId), eq(notifyCodes.userId, me.userId), eq(notifyCodes.channel, "email")));
    await tx.insert(notifyCodes).values({ codeHash: emailCodeHash(me.orgId, me.userId, code), orgId: me.orgId, userId: me.userId, channel: "email", expiresAt });
    await bindChannel(ctx, tx, me, "email", { email }, "pending");
  });
  await sendEmail(ctx.config, email, {
    subject: `Your Retasc confirmation code: ${code}`,
    text: `Enter ${code} on the Retasc Notifications page to get notifications at this address. It works for 15 minutes.\n\nIf you did not ask for this, ignore this email.`,
    messageId: `<confirm.${crypto.randomUUID()}@retasc>`,
  }).catch(() => {
    throw new DomainError("UNAVAILABLE", "the confirmation email could not be sent", "Check the address, or try again in a minute.");
  });
  return { email, expiresAt: expiresAt.toISOString() };
}

export const confirmEmailInput = z.object({ code: z.string().trim().regex(/^\d{6}$/, "must be 6 digits") }).strict();

export async function confirmEmail(ctx: Ctx, raw: z.input<typeof confirmEmailInput>) {
  const { code } = confirmEmailInput.parse(raw);
  const me = await person(ctx);
  const now = ctx.clock.now();
  const mine = and(eq(notifyCodes.orgId, me.orgId), eq(notifyCodes.userId, me.userId), eq(notifyCodes.channel, "email"), isNull(notifyCodes.usedAt), gt(notifyCodes.expiresAt, now));
  return ctx.db.transaction(async (tx) => {
    const [pending] = await tx.select().from(notifyCodes).where(mine).orderBy(desc(notifyCodes.createdAt)).limit(1).for("update");
    if (!pending || pending.attempts >= EMAIL_CODE_ATTEMPTS) {
      throw invalidInput("no confirmation code is waiting", "Enter your address again to get a new code.");
    }
    if (pending.codeHash !== emailCodeHash(me.orgId, me.userId, code)) {
      await tx.update(notifyCodes).set({ attempts: pending.attempts + 1 }).where(eq(notifyCodes.codeHash, pending.codeHash));
      throw invalidInput("that code is not the one we sent", `Check the email; ${EMAIL_CODE_ATTEMPTS - pending.attempts - 1} tries left.`);
    }
    await tx.update(notifyCodes).set({ usedAt: now }).where(eq(notifyCodes.codeHash, pending.codeHash));
    const [bound] = await tx
      .update(notifyBindings)
      .set({ status: "active", brokenReason: null, updatedAt: sql`now()` })
      .where(and(eq(notifyBindings.orgId, me.orgId), eq(notifyBindings.userId, me.userId), eq(notifyBindings.channel, "email")))
      .returning({ id: notifyBindings.id });
    if (!bound) throw invalidInput("no email address is waiting", "Enter your address again.");
    return { confirmed: true };
  });
}

export const channelInput = z.object({ channel: z.enum(notifyChannels) }).strict();

/** Removes a binding; the person's mutes stay for when they connect again. */
export async function disconnect(ctx: Ctx, raw: z.input<typeof channelInput>) {
  const { channel } = channelInput.parse(raw);
  const me = await person(ctx);
  const removed = await ctx.db
    .delete(notifyBindings)
    .where(and(eq(notifyBindings.orgId, me.orgId), eq(notifyBindings.userId, me.userId), eq(notifyBindings.channel, channel)))
    .returning({ id: notifyBindings.id });
  return { disconnected: removed.length > 0 };
}

export const muteInput = z.object({ kind: z.enum(mutableKinds), muted: z.boolean() }).strict();

export async function setMute(ctx: Ctx, raw: z.input<typeof muteInput>) {
  const { kind, muted } = muteInput.parse(raw);
  const me = await person(ctx);
  if (muted) await ctx.db.insert(notifyMutes).values({ ...me, kind }).onConflictDoNothing();
  else await ctx.db.delete(notifyMutes).where(and(eq(notifyMutes.orgId, me.orgId), eq(notifyMutes.userId, me.userId), eq(notifyMutes.kind, kind)));
  return { kind, muted };
}

/** "Send test": a notify.send through the outbox, the same path as every message. */
export async function sendTest(ctx: Ctx, raw: z.input<typeof channelInput>) {
  const { channel } = channelInput.parse(raw);
  const me = await person(ctx);
  const outboxId = await transactionWithNotices(ctx.db, async (tx) => {
    const [binding] = await tx
      .select({ status: notifyBindings.status })
      .from(notifyBindings)
      .where(and(eq(notifyBindings.orgId, me.orgId), eq(notifyBindings.userId, me.userId), eq(notifyBindings.channel, channel)));
    if (binding?.status !== "active") throw invalidInput(`${channel} is not connected`, "Connect it first.");
    return enqueue(tx, "notify.send", { orgId: me.orgId, issueId: null, kind: "test", userId: me.userId, channel });
  });
  return { queued: true, key: `outbox:${outboxId}` };
}

/** What the Notifications page shows a person: channels, their bindings (broken ones with the reason), mutes, recent messages. */
export async function notificationSettings(ctx: Ctx) {
  const me = await person(ctx, false);
  const configured = configuredChannels(ctx.config);
  const [bindings, mutes, recent, slack] = await Promise.all([
    ctx.db.select().from(notifyBindings).where(and(eq(notifyBindings.orgId, me.orgId), eq(notifyBindings.userId, me.userId))),
    ctx.db.select({ kind: notifyMutes.kind }).from(notifyMutes).where(and(eq(notifyMutes.orgId, me.orgId), eq(notifyMutes.userId, me.userId))),
    ctx.db
      .select({ kind: notifyDeliveries.kind, channel: notifyDeliveries.channel, state: notifyDeliveries.state, error: notifyDeliveries.error, createdAt: notifyDeliveries.createdAt })
      .from(notifyDeliveries)
      .where(and(eq(notifyDeliveries.orgId, me.orgId), eq(notifyDeliveries.userId, me.userId)))
      .orderBy(desc(notifyDeliveries.createdAt))
      .limit(10),
    ctx.db.select({ teamId: notifySlackInstalls.teamId }).from(notifySlackInstalls).where(eq(notifySlackInstalls.orgId, me.orgId)),
  ]);
  const cipher = await ctx.keyring.forOrg(ctx.db, me.orgId);
  const muted = new Set(mutes.map((m) => m.kind));
  return {
    channels: notifyChannels.map((channel) => {
      const b = bindings.find((x) => x.channel === channel);
      return {
        channel,
        configured: configured[channel],
        status: b?.status ?? null,
        label: b ? addressLabel(channel, JSON.parse(cipher.decrypt(b.addressEnc)) as Address) : null,
        brokenReason: b?.brokenReason ?? null,
      };
    }),
    slackInstalled: slack.length > 0,
    kinds: mutableKinds.map((kind) => ({ kind, description: kindDescriptions[kind], muted: muted.has(kind) })),
    recent: recent.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() })),
  };
}
