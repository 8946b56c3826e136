import { Form } from "react-router";
import { cliInstallCommand } from "../../../constants/cli-install.ts";
import type { inviteAndMail } from "../../../server/orgs/invite-mail.ts";
import type { listInvites } from "../../../server/orgs/invites.ts";
import { Button, Field, Notice, SecretBox, Select } from "../ui.tsx";
import { stamp } from "./format.ts";
import { actions, cell, head, ProjectTicks, row, type ProjectChoice, type Viewer } from "./members.tsx";
import "./dash.css";

/** The members page's invite panels (app/routes/dash.settings.members.tsx), which only owners and admins see. */

type NewInvite = Awaited<ReturnType<typeof inviteAndMail>>;
type InviteRow = Awaited<ReturnType<typeof listInvites>>["invites"][number];

/** An invite just made: shown once, with what the invitee runs or opens. */
export function NewInviteNote({ invite, origin }: { invite: NewInvite; origin: string }) {
  return (
    <div className="mb-4 flex flex-col gap-3" data-testid="new-invite">
      <Notice>
        Invite created for {invite.email ?? "whoever holds it"}, joining as {invite.role === "admin" ? "an admin" : "a member"}. It is shown
        once, works once, and expires {stamp(invite.expiresAt)}.{" "}
        {invite.mail?.emailed
          ? `The link was emailed to ${invite.email}.`
          : invite.mail
            ? `It was not emailed (${invite.mail.reason}): send them the link yourself.`
            : "Send them the link yourself."}
      </Notice>
      <SecretBox label="Invite code" value={invite.code} />
      <SecretBox label="They run" value={`${cliInstallCommand(origin)}\nretasc join ${invite.link}`} />
      <SecretBox label="Or open" value={invite.link} />
    </div>
  );
}

/** The form that makes an invite; what it says depends on whether this server sends mail. */
export function InviteForm({ me, projects, mails }: { me: Viewer; projects: ProjectChoice[]; mails: boolean }) {
  return (
    <>
      <p className="mb-3 text-sm text-muted">
        {mails
          ? "An invite with an email is mailed to that address, and only the person signed in with it can join. Without an email, whoever holds the link joins."
          : "This server sends no email (SMTP_URL and SMTP_FROM are unset): copy the link and send it yourself. An invite with an email is redeemed only by a person signed in with that address, verified (GitHub or Google); without an email, whoever holds the link joins."}
      </p>
      <Form method="post" className="mb-6 flex flex-wrap items-end gap-3">
        <Field label="Email" name="email" type="email" autoComplete="off" placeholder="nora@example.com" />
        <Field label="Expires after (days)" name="expiresDays" type="number" defaultValue="7" />
        {me.role === "owner" ? (
          <Select
            label="Joins as"
            name="role"
            defaultValue="member"
            options={[
              { value: "member", label: "member" },
              { value: "admin", label: "admin" },
            ]}
          />
        ) : null}
        {projects.length > 1 ? <ProjectTicks projects={projects} checked={null} /> : null}
        <Button name="intent" value="invite">
          New invite
        </Button>
      </Form>
    </>
  );
}

export function InviteTable({ title, invites }: { title: string; invites: InviteRow[] }) {
  return (
    <table className="stack-md w-full border-collapse text-left text-sm">
      <caption className="sr-only">{title}</caption>
      <thead>
        <tr className="border-b border-stone-300">
          <th scope="col" className={head}>For</th>
          <th scope="col" className={head}>Joins as</th>
          <th scope="col" className={head}>State</th>
          <th scope="col" className={head}>Expires</th>
          <th scope="col" className={head}>Accepted by</th>
          <th scope="col"><span className="sr-only">Actions</span></th>
        </tr>
      </thead>
      <tbody>
        {invites.map((i) => (
          <tr key={i.inviteId} className={row} data-invite={i.email ?? "open"}>
            <td className={`${cell} [overflow-wrap:anywhere]`} data-label="For">
              {i.email ?? "anyone with the link"}
              {i.emailedAt ? <span className="block text-xs text-muted">emailed {stamp(i.emailedAt)}</span> : null}
            </td>
            <td className={cell} data-label="Joins as">{i.role}</td>
            <td className={cell} data-label="State">{i.state}</td>
            <td className={`${cell} tabular-nums`} data-label="Expires">{i.expiresAt ? stamp(i.expiresAt) : "—"}</td>
            <td className={`${cell} [overflow-wrap:anywhere]`} data-label="Accepted by">{i.acceptedBy ?? "—"}</td>
            <td className={actions}>
              {i.state === "pending" ? (
                <Form method="post">
                  <input type="hidden" name="inviteId" value={i.inviteId} />
                  <Button name="intent" value="revoke-invite" tone="danger" aria-label={`Revoke the invite for ${i.email ?? "anyone with the link"}`}>
                    Revoke
                  </Button>
                </Form>
              ) : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
