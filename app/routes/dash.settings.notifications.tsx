import { Form, redirect } from "react-router";
import type { Route } from "./+types/dash.settings.notifications";
import { requireMember } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { readForm } from "../forms.server.ts";
import { confirmEmail, disconnect, notificationSettings, sendTest, setMute, startConnect, startEmail } from "../../server/notify/bindings.ts";
import { slackInstallUrl } from "../../server/notify/slack.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { Button, Card, CopyButton, ErrorNote, Field, Notice } from "../components/ui.tsx";
import "../components/dash/dash.css";
import { requestScope } from "../../server/http/scope.ts";

export function meta() {
  return [{ title: "Notifications · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  const slack = new URL(request.url).searchParams.get("slack");
  return { settings: await notificationSettings(ctx), canInstallSlack: membership.role !== "member", slack };
}

const channelNames = { telegram: "Telegram", email: "Email", slack: "Slack", discord: "Discord" } as const;
type Channel = keyof typeof channelNames;

export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const intent = String(form.get("intent") ?? "");
  const channel = String(form.get("channel") ?? "") as Channel;
  if (intent === "install-slack") {
    const url = await attempt(context.log, () => slackInstallUrl(ctx, publicBaseUrl(request, context.services.config)));
    return url.ok ? redirect(url.value) : { error: url.error, done: null, connect: null };
  }
  const result = await attempt(context.log, async (): Promise<{ done?: string; connect?: { channel: Channel; code: string; link: string | null; expiresAt: string } }> => {
    switch (intent) {
      case "connect":
        return { connect: { ...(await startConnect(ctx, { channel: channel as "telegram" })), channel } };
      case "email-start":
        await startEmail(ctx, { email: String(form.get("email") ?? "") }, { clientAddress: requestScope()?.address ?? null });
        return { done: "We sent a 6-digit code to that address. Enter it below." };
      case "email-confirm":
        await confirmEmail(ctx, { code: String(form.get("code") ?? "") });
        return { done: "Email connected." };
      case "disconnect":
        await disconnect(ctx, { channel });
        return { done: `${channelNames[channel] ?? channel} disconnected; your mutes stay.` };
      case "mute":
      case "unmute":
        await setMute(ctx, { kind: String(form.get("kind") ?? "") as "done", muted: intent === "mute" });
        return { done: intent === "mute" ? "Muted." : "Unmuted." };
      case "test":
        await sendTest(ctx, { channel });
        return { done: `A test message is on its way to ${channelNames[channel] ?? channel}; its outcome shows under Recent messages.` };
      default:
        return { done: undefined };
    }
  });
  return result.ok ? { error: null, done: result.value.done ?? null, connect: result.value.connect ?? null } : { error: result.error, done: null, connect: null };
}

/** What a person types to the bot: Slack's `/retasc` command takes a verb, Discord's `/connect` only the code. */
const connectCommand = (channel: Channel, code: string) => (channel === "slack" ? `/retasc connect ${code}` : `/connect ${code}`);

const hidden = (name: string, value: string) => <input type="hidden" name={name} value={value} />;

export default function Notifications({ loaderData, actionData }: Route.ComponentProps) {
  const { settings, canInstallSlack, slack } = loaderData;
  const connect = actionData?.connect ?? null;
  return (
    <div className="flex flex-col gap-6">
      <h1 className="text-2xl font-semibold">Notifications</h1>
      <p className="text-sm text-muted">
        When work you are tied to moves (an issue you wrote is done or canceled, work waits for your review, an issue is assigned to you, your agent's
        lease lapses) you hear about it where you already are. Never about your own actions.
      </p>
      <ErrorNote error={actionData?.error} />
      {actionData?.done ? <Notice>{actionData.done}</Notice> : null}
      {slack === "installed" ? <Notice>The Slack app is installed for this org. Each person can now connect Slack.</Notice> : null}
      {slack === "failed" ? <ErrorNote error={{ message: "Slack did not finish adding the app", hint: "Try adding it again." }} /> : null}

      {settings.channels.map((c) => (
        <Card key={c.channel} title={channelNames[c.channel]}>
          <div className="flex flex-col gap-3 text-sm" data-channel={c.channel}>
            {!c.configured ? (
              <p className="text-muted">Not set up on this server.</p>
            ) : c.status === "active" ? (
              <p>
                Connected{c.label ? <> as <span className="font-mono">{c.label}</span></> : null}.
              </p>
            ) : c.status === "broken" ? (
              <p role="alert">
                Broken: {c.brokenReason}. Connect again to mend it.
              </p>
            ) : c.status === "pending" ? (
              <p>Waiting for the code we emailed to {c.label}.</p>
            ) : (
              <p className="text-muted">Not connected.</p>
            )}

            {c.configured && c.channel === "email" ? (
              <>
                <Form method="post" className="flex flex-wrap items-end gap-3">
                  {hidden("intent", "email-start")}
                  <Field label="Email address" name="email" type="email" required />
                  <Button tone="secondary">Send code</Button>
                </Form>
                {c.status === "pending" ? (
                  <Form method="post" className="flex flex-wrap items-end gap-3">
                    {hidden("intent", "email-confirm")}
                    <Field label="6-digit code" name="code" required pattern="\d{6}" autoComplete="one-time-code" />
                    <Button>Confirm</Button>
                  </Form>
                ) : null}
              </>
            ) : null}

            {c.configured && c.channel === "slack" && !settings.slackInstalled ? (
              canInstallSlack ? (
                <Form method="post">
                  {hidden("intent", "install-slack")}
                  <Button tone="secondary">Add the app to Slack</Button>
                </Form>
              ) : (
                <p className="text-muted">An owner or admin adds the Slack app first.</p>
              )
            ) : null}

            {c.configured && c.channel !== "email" && (c.channel !== "slack" || settings.slackInstalled) && c.status !== "active" ? (
              <Form method="post">
                {hidden("intent", "connect")}
                {hidden("channel", c.channel)}
                <Button tone="secondary">Connect {channelNames[c.channel]}</Button>
              </Form>
            ) : null}

            {connect?.channel === c.channel ? (
              <div className="flex flex-col gap-2" data-connect-code>
                {connect.link ? (
                  <p>
                    Open <a className="underline" href={connect.link} target="_blank" rel="noreferrer">{connect.link}</a> and press Start. The link works once, for 15 minutes.
                  </p>
                ) : (
                  <p>
                    In {channelNames[c.channel]}, send <code className="font-mono">{connectCommand(c.channel, connect.code)}</code> within 15 minutes.
                  </p>
                )}
                <div>
                  <CopyButton value={connect.link ?? connectCommand(c.channel, connect.code)} label="Copy" />
                </div>
              </div>
            ) : null}

            {c.status === "active" || c.status === "broken" ? (
              <div className="flex flex-wrap gap-3">
                {c.status === "active" ? (
                  <Form method="post">
                    {hidden("intent", "test")}
                    {hidden("channel", c.channel)}
                    <Button tone="secondary">Send test</Button>
                  </Form>
                ) : null}
                <Form method="post">
                  {hidden("intent", "disconnect")}
                  {hidden("channel", c.channel)}
                  <Button tone="secondary">Disconnect</Button>
                </Form>
              </div>
            ) : null}
          </div>
        </Card>
      ))}

      <Card title="What you hear about">
        <ul className="flex flex-col gap-2 text-sm">
          {settings.kinds.map((k) => (
            <li key={k.kind} className="flex flex-wrap items-center justify-between gap-3">
              <span>
                {k.description}
                {k.muted ? <span className="ml-2 text-muted">(muted)</span> : null}
              </span>
              <Form method="post">
                {hidden("intent", k.muted ? "unmute" : "mute")}
                {hidden("kind", k.kind)}
                <Button tone="secondary" aria-label={`${k.muted ? "Unmute" : "Mute"}: ${k.description}`}>
                  {k.muted ? "Unmute" : "Mute"}
                </Button>
              </Form>
            </li>
          ))}
        </ul>
      </Card>

      <Card title="Recent messages">
        {settings.recent.length === 0 ? (
          <p className="text-sm text-muted">None yet.</p>
        ) : (
          <ul className="flex flex-col gap-1 text-sm">
            {settings.recent.map((r, i) => (
              <li key={i}>
                <span className="tabular-nums text-muted">{r.createdAt.slice(0, 16).replace("T", " ")}</span> {r.kind} on {channelNames[r.channel]}: {r.state}
                {r.error ? <span className="text-muted"> ({r.error})</span> : null}
              </li>
            ))}
          </ul>
        )}
      </Card>
    </div>
  );
}
