import crypto from "node:crypto";
import { eq } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import { notifySlackInstalls } from "../../db/schema/index.ts";
import type { Ctx, Services } from "../context.ts";
import { DomainError, invalidInput } from "../errors.ts";
import type { Logger } from "../log.ts";
import { actorOf, requireRole } from "../orgs/access.ts";
import { bindChannel, configuredChannels, consumeCode } from "./bindings.ts";
import { slackClient } from "./senders/slack.ts";
import { firstSighting, refused, type WebhookReply } from "./webhook-auth.ts";

/** Slack's own window for a request's timestamp: older (or further ahead) is a replay. */
const SLACK_MAX_SKEW_S = 5 * 60;
const STATE_TTL_MS = 10 * 60_000;
export const slackCallbackPath = "/dash/settings/notifications/slack";

/** The callback on the origin the admin is using (the route passes the request's public base URL), so the session cookie comes along. */
const redirectUri = (baseUrl: string) => `${baseUrl.replace(/\/+$/, "")}${slackCallbackPath}`;
const stateSecret = (services: Services) => services.keyring.deriveSecret("slack-oauth-state");
const signState = (services: Services, payload: string) => crypto.createHmac("sha256", stateSecret(services)).update(payload).digest("base64url");

/**
 * Where an owner or admin is sent to add the Slack app (OAuth v2, chat:write and commands).
 * `state` names the org and person and expires, HMAC-signed so the callback can trust it.
 */
export async function slackInstallUrl(ctx: Ctx, baseUrl: string): Promise<string> {
  if (!configuredChannels(ctx.config).slack) throw new DomainError("UNAVAILABLE", "Slack is not set up on this server", "Set SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and SLACK_SIGNING_SECRET.");
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "adding the Slack app");
  const payload = `${actor.orgId}.${actor.userId}.${ctx.clock.now().getTime() + STATE_TTL_MS}`;
  const url = new URL(ctx.config.SLACK_OAUTH_URL);
  url.searchParams.set("client_id", ctx.config.SLACK_CLIENT_ID!);
  url.searchParams.set("scope", "chat:write,commands");
  url.searchParams.set("redirect_uri", redirectUri(baseUrl));
  url.searchParams.set("state", `${payload}.${signState(ctx, payload)}`);
  return url.toString();
}

/** The OAuth callback: checks the state, trades the code for the bot token and keeps it encrypted. */
export async function completeSlackInstall(ctx: Ctx, input: { code: string | null; state: string | null; error?: string | null; baseUrl: string }) {
  if (input.error) throw invalidInput(`Slack said: ${input.error.slice(0, 100)}`, "Try adding the app again.");
  const actor = await actorOf(ctx);
  requireRole(actor, ["owner", "admin"], "adding the Slack app");
  const parts = (input.state ?? "").split(".");
  const [orgId, userId, expires, mac] = parts;
  const payload = `${orgId}.${userId}.${expires}`;
  const expected = signState(ctx, payload);
  const valid =
    parts.length === 4 && mac !== undefined && mac.length === expected.length && crypto.timingSafeEqual(Buffer.from(mac), Buffer.from(expected)) &&
    orgId === actor.orgId && userId === actor.userId && Number(expires) > ctx.clock.now().getTime();
  if (!valid || !input.code) throw invalidInput("this Slack sign-in link is not valid any more", "Start again from the Notifications page.");
  const reply = await (await slackClient(ctx.config)).oauth.v2
    .access({ client_id: ctx.config.SLACK_CLIENT_ID!, client_secret: ctx.config.SLACK_CLIENT_SECRET!, code: input.code, redirect_uri: redirectUri(input.baseUrl) })
    .catch(() => {
      throw new DomainError("UNAVAILABLE", "Slack did not accept the installation", "Try adding the app again.");
    });
  if (!reply.access_token || !reply.team?.id) throw new DomainError("UNAVAILABLE", "Slack sent no bot token", "Try adding the app again.");
  const botTokenEnc = (await ctx.keyring.forOrg(ctx.db, actor.orgId)).encrypt(reply.access_token);
  await ctx.db
    .insert(notifySlackInstalls)
    .values({ orgId: actor.orgId, teamId: reply.team.id, botTokenEnc, installedBy: actor.userId })
    .onConflictDoUpdate({ target: notifySlackInstalls.orgId, set: { teamId: reply.team.id, botTokenEnc, installedBy: actor.userId } });
  return { teamId: reply.team.id };
}

async function installedTeam(db: Db, orgId: string): Promise<string | null> {
  const [row] = await db.select({ teamId: notifySlackInstalls.teamId }).from(notifySlackInstalls).where(eq(notifySlackInstalls.orgId, orgId));
  return row?.teamId ?? null;
}

/** Slack's v0 signature: HMAC-SHA256 of `v0:<timestamp>:<body>` under the signing secret, compared in constant time. */
export function slackSignatureValid(secret: string, body: string, timestamp: string | null, signature: string | null, nowS: number): boolean {
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp) || Math.abs(nowS - Number(timestamp)) > SLACK_MAX_SKEW_S) return false;
  const expected = Buffer.from(`v0=${crypto.createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex")}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

/**
 * POST /webhooks/slack: the `/retasc` slash command. Signed (v0) within five minutes, and not
 * seen before, or refused (401). `/retasc connect <code>` binds the person's Slack user in the workspace
 * installed for the code's org; the answer is ephemeral (only they see it).
 */
export async function receiveSlackCommand(services: Services, log: Logger, body: string, headers: Headers): Promise<WebhookReply> {
  const secret = services.config.SLACK_SIGNING_SECRET;
  if (!secret) return refused(404, "Slack is not set up on this server");
  const nowS = Math.floor(services.clock.now().getTime() / 1000);
  if (!slackSignatureValid(secret, body, headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature"), nowS)) {
    return refused(401, "the request signature is missing, wrong or stale");
  }
  if (!(await firstSighting(services.db, "slack", headers.get("x-slack-signature")!))) return refused(401, "this request was already received (a replay)");
  const form = new URLSearchParams(body);
  const say = (text: string): WebhookReply => ({ status: 200, body: { response_type: "ephemeral", text } });
  const [verb, code, ...rest] = (form.get("text") ?? "").trim().split(/\s+/);
  const teamId = form.get("team_id");
  const userId = form.get("user_id");
  if (verb !== "connect" || !code || rest.length > 0 || !teamId || !userId) return say("Usage: /retasc connect <code> (the code is on the Retasc Notifications page).");
  const owner = await consumeCode(services.db, "slack", code, services.clock.now());
  if (!owner) return say("That code has expired or was already used. Get a new one on the Retasc Notifications page.");
  if ((await installedTeam(services.db, owner.orgId)) !== teamId) {
    log.info({ orgId: owner.orgId }, "slack: a connect code used from a workspace not installed for its org");
    return say("This Slack workspace is not the one installed for that Retasc org.");
  }
  await bindChannel(services, services.db, owner, "slack", { teamId, userId });
  return say("Connected: Retasc will DM you here when work you are tied to moves.");
}
