import { eq } from "drizzle-orm";
import type { WebClient } from "@slack/web-api";
import { notifySlackInstalls } from "../../../db/schema/index.ts";
import type { Config } from "../../config/index.ts";
import type { Services } from "../../context.ts";
import { onFirstUse } from "../../on-first-use.ts";
import { retryAfterMs, SendFailure, shortReason } from "../../outbound/failure.ts";

const slackSdk = onFirstUse(() => import("@slack/web-api"));

/** A Web API client on SLACK_API_URL that never retries or waits by itself: the delivery decides. */
export async function slackClient(config: Config, token?: string): Promise<WebClient> {
  const { WebClient } = await slackSdk.load();
  return new WebClient(token, { slackApiUrl: config.SLACK_API_URL, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
}

/** The org's Slack bot token, decrypted; null when the app is not installed. */
export async function slackBotToken(services: Services, orgId: string): Promise<string | null> {
  const [install] = await services.db.select().from(notifySlackInstalls).where(eq(notifySlackInstalls.orgId, orgId));
  if (!install) return null;
  return (await services.keyring.forOrg(services.db, orgId)).decrypt(install.botTokenEnc);
}

/** chat.postMessage to the person's user id (the app's DM with them); the message ts. */
export async function sendSlack(config: Config, token: string, userId: string, text: string): Promise<string> {
  try {
    const reply = await (await slackClient(config, token)).chat.postMessage({ channel: userId, text, unfurl_links: false, unfurl_media: false });
    return String(reply.ts ?? "");
  } catch (error) {
    const e = error as { code?: string; retryAfter?: number; data?: { error?: string }; statusCode?: number };
    const ErrorCode = slackSdk.loaded?.ErrorCode;
    if (ErrorCode && e.code === ErrorCode.RateLimitedError) throw new SendFailure("rate", "rate limited", retryAfterMs(e.retryAfter));
    // invalid_auth, token_revoked, account_inactive, channel_not_found, user_not_found…
    if (ErrorCode && e.code === ErrorCode.PlatformError) throw new SendFailure("permanent", shortReason(e.data?.error));
    throw new SendFailure("retry", e.statusCode ? `Slack HTTP ${e.statusCode}` : "Slack could not be reached");
  }
}
