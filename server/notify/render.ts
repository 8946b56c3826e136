import type { Message } from "./message.ts";

/**
 * One message, escaped for each platform: the title, reason and checkpoint are other people's
 * text and must never become markup (a link, a mention, a bold run) on the other side.
 */
const html = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Telegram with parse_mode HTML: only &, < and > are special. */
export function telegramHtml(m: Message): string {
  const lines = [`<b>${html(m.subject)}</b> ${html(m.headline)}`];
  for (const d of m.details) lines.push(`<b>${html(d.label)}:</b> ${html(d.text)}`);
  lines.push(`<a href="${html(m.url)}">Open in Retasc</a>`);
  return lines.join("\n");
}

/** Slack mrkdwn: &, < and > are escaped (Slack's rule), so no <!channel>, <@U…> or <url|label> from content. */
export function slackText(m: Message): string {
  const lines = [`*${html(m.subject)}* ${html(m.headline)}`];
  for (const d of m.details) lines.push(`*${html(d.label)}:* ${html(d.text)}`);
  lines.push(`<${html(m.url)}|Open in Retasc>`);
  return lines.join("\n");
}

/** Discord markdown: every markdown character backslash-escaped; mentions are disabled by allowed_mentions in the sender. */
const discordEscape = (text: string) => text.replace(/[\\*_~`|>#[\]<@]/g, (c) => `\\${c}`);

export function discordText(m: Message): string {
  const lines = [`**${discordEscape(m.subject)}** ${discordEscape(m.headline)}`];
  for (const d of m.details) lines.push(`**${discordEscape(d.label)}:** ${discordEscape(d.text)}`);
  lines.push(`<${m.url}>`);
  return lines.join("\n").slice(0, 2000);
}

/** Email: plain text (nothing is markup), the subject on one line. */
export function emailParts(m: Message): { subject: string; text: string } {
  const subject = `${m.subject} ${m.headline}`.replace(/[\r\n]+/g, " ").slice(0, 250);
  const lines = [`${m.subject} ${m.headline}`, ""];
  for (const d of m.details) lines.push(`${d.label}: ${d.text}`);
  if (m.details.length) lines.push("");
  lines.push(m.url, "", "You get this because notifications are on for you in Retasc; mute kinds on the Dash Notifications page.");
  return { subject, text: lines.join("\n") };
}
