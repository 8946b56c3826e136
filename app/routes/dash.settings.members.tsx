import { Form, Link } from "react-router";
import type { Route } from "./+types/dash.settings.members";
import { requireMember } from "../auth.server.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { attempt } from "../errors.server.ts";
import { inviteAndMail } from "../../server/orgs/invite-mail.ts";
import { listInvites, revokeInvite } from "../../server/orgs/invites.ts";
import { emailConfigured } from "../../server/outbound/email.ts";
import { listMembers, reactivateMember, retireMember, setMemberRole, setMemberScope, suspendMember } from "../../server/orgs/members.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { Button, Card, EmptyState, ErrorNote, Field, Notice, SecretBox, Select } from "../components/ui.tsx";
import { stamp } from "../components/dash/format.ts";
import "../components/dash/dash.css";
import { readForm } from "../forms.server.ts";
import { cliInstallCommand } from "../../constants/cli-install.ts";
import { requestScope } from "../../server/http/scope.ts";

export function meta() {
  return [{ title: "Members · Retasc" }];
}

/**
 * Members and invites a Dash page shows: each row carries its forms, and the page its hydration
 * data too, so 200 of each made a 762 KiB page whose render held the event loop (and /healthz)
 * for hundreds of milliseconds (bench/healthz-under-reads.ts); 50 keeps it near 200 KiB.
 */
const PER_PAGE = 50;

export async function loader({ request, context }: Route.LoaderArgs) {
  const { ctx, membership } = await requireMember(request, context);
  const manages = membership.role !== "member";
  const params = new URL(request.url).searchParams;
  // Members and invites page apart: each link keeps the other list where it is.
  const cursor = params.get("cursor") ?? undefined;
  const invitesCursor = params.get("invitesCursor") ?? undefined;
  const { members, nextCursor } = await listMembers(ctx, { cursor }, PER_PAGE);
  const invites = manages ? await listInvites(ctx, { cursor: invitesCursor, limit: PER_PAGE }) : { invites: [] };
  const { projects } = await listProjects(ctx, {});
  return {
    members,
    nextCursor: nextCursor ?? null,
    cursor: cursor ?? null,
    invites: invites.invites,
    invitesNextCursor: invites.nextCursor ?? null,
    invitesCursor: invitesCursor ?? null,
    projects, me: membership, manages, mails: emailConfigured(context.services.config), origin: publicBaseUrl(request, context.services.config) };
}

export async function action({ request, context }: Route.ActionArgs) {
  const { ctx } = await requireMember(request, context);
  const form = await readForm(request);
  const intent = String(form.get("intent") ?? "");
  const memberId = String(form.get("memberId") ?? "");
  // Project checkboxes: none ticked is every project.
  const projectIds = form.getAll("projectIds").map(String);
  const scope = projectIds.length > 0 ? projectIds : null;
  const result = await attempt(context.log, async () => {
    switch (intent) {
      case "invite": {
        const invite = await inviteAndMail(
          ctx,
          {
            expiresDays: Number(form.get("expiresDays") ?? 7),
            role: String(form.get("role") ?? "member") as "member" | "admin",
            email: String(form.get("email") ?? ""),
            projectIds: scope,
          },
          { baseUrl: publicBaseUrl(request, context.services.config), clientAddress: requestScope()?.address ?? null },
        );
        return { invite };
      }
      case "revoke-invite":
        await revokeInvite(ctx, { inviteId: String(form.get("inviteId") ?? "") });
        return { done: "Invite revoked." };
      case "suspend": {
        const r = await suspendMember(ctx, { memberId });
        return { done: `Suspended; ${r.retiredAgents} agent${r.retiredAgents === 1 ? "" : "s"} retired.` };
      }
      case "reactivate":
        await reactivateMember(ctx, { memberId });
        return { done: "Reactivated." };
      case "scope":
        await setMemberScope(ctx, { memberId, projectIds: scope });
        return { done: scope ? "Scope changed: they and their agents see only the projects ticked." : "Scope lifted: they see every project." };
      case "retire":
        await retireMember(ctx, { memberId });
        return { done: "Agent retired." };
      case "make-admin":
      case "make-member":
      case "make-owner": {
        const role = intent.slice("make-".length) as "admin" | "member" | "owner";
        await setMemberRole(ctx, { memberId, role });
        return { done: `Role changed to ${role}.` };
      }
      default:
        return { done: null };
    }
  });
  return result.ok ? { ...result.value, error: null } : { error: result.error };
}

const head = "px-2 py-2 font-medium text-muted";
const row = "border-b border-line max-md:py-2";
const cell = "px-2 py-2 align-top";
const actions = "px-2 py-1.5 text-right align-top whitespace-nowrap [&>form+form]:ml-2";

function Action({ intent, memberId, label, tone = "secondary" }: { intent: string; memberId: string; label: string; tone?: "secondary" | "danger" }) {
  return (
    <Form method="post" className="inline">
      <input type="hidden" name="memberId" value={memberId} />
      <Button name="intent" value={intent} tone={tone}>
        {label}
      </Button>
    </Form>
  );
}

/** Ticks for the projects a scope names; none ticked means every project. */
function ProjectTicks({ projects, checked }: { projects: { id: string; prefix: string; name: string }[]; checked: string[] | null }) {
  return (
    <fieldset className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
      <legend className="mb-1 font-medium">Projects (none ticked: all)</legend>
      {projects.map((p) => (
        <label key={p.id} className="inline-flex items-center gap-1">
          <input type="checkbox" name="projectIds" value={p.id} defaultChecked={checked?.includes(p.id) ?? false} />
          <span className="font-mono">{p.prefix}</span> {p.name}
        </label>
      ))}
    </fieldset>
  );
}

export default function Members({ loaderData, actionData }: Route.ComponentProps) {
  const { members, nextCursor, cursor, invites, invitesNextCursor, invitesCursor, projects, me, manages, mails, origin } = loaderData;
  const at = (position: { cursor?: string | null; invitesCursor?: string | null }) => {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries({ cursor, invitesCursor, ...position })) if (value) query.set(name, value);
    return `?${query}`;
  };
  const prefixOf = new Map(projects.map((p) => [p.id, p.prefix]));
  const pending = invites.filter((i) => i.state === "pending");
  const past = invites.filter((i) => i.state !== "pending");
  const people = members.filter((m) => m.kind === "human");
  const agents = members.filter((m) => m.kind === "agent");
  const result = actionData && "invite" in actionData ? actionData : null;
  return (
    <div className="flex flex-col gap-8">
      <h1 className="text-2xl font-semibold">Members</h1>
      <ErrorNote error={actionData?.error} />
      {actionData && "done" in actionData && actionData.done ? <Notice>{actionData.done}</Notice> : null}
      <Card title="People">
        <table className="stack-md w-full border-collapse text-left text-sm">
          <thead>
            <tr className="border-b border-stone-300">
              <th scope="col" className={head}>Name</th>
              <th scope="col" className={head}>Email</th>
              <th scope="col" className={head}>Role</th>
              <th scope="col" className={head}>State</th>
              <th scope="col" className={head}>Projects</th>
              <th scope="col"><span className="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {people.map((p) =>
              p.kind === "human" ? (
                <tr key={p.memberId} className={row} data-member={p.email}>
                  <td className={cell} data-label="Name">{p.name}</td>
                  <td className={cell} data-label="Email">{p.email}</td>
                  <td className={cell} data-label="Role">{p.role}</td>
                  <td className={cell} data-label="State">{p.status}</td>
                  <td className={cell} data-label="Projects">
                    {p.projectIds ? p.projectIds.map((id) => prefixOf.get(id) ?? id).join(", ") : "all"}
                    {/* Only members are scoped; an admin scopes members, an owner anyone below (server/orgs/scope.ts). */}
                    {manages && p.role === "member" && p.memberId !== me.memberId ? (
                      <details className="mt-1">
                        <summary className="cursor-pointer text-xs text-muted">Change</summary>
                        <Form method="post" className="mt-2 flex flex-col items-start gap-2">
                          <input type="hidden" name="memberId" value={p.memberId} />
                          <ProjectTicks projects={projects} checked={p.projectIds} />
                          <Button name="intent" value="scope">
                            Set projects
                          </Button>
                        </Form>
                      </details>
                    ) : null}
                  </td>
                  <td className={actions}>
                    {manages && p.memberId !== me.memberId ? (
                      p.status === "active" ? (
                        <Action intent="suspend" memberId={p.memberId} label="Suspend" tone="danger" />
                      ) : (
                        <Action intent="reactivate" memberId={p.memberId} label="Reactivate" />
                      )
                    ) : null}
                    {me.role === "owner" && p.memberId !== me.memberId ? (
                      p.role === "member" ? (
                        <Action intent="make-admin" memberId={p.memberId} label="Make admin" />
                      ) : p.role === "admin" ? (
                        <Action intent="make-member" memberId={p.memberId} label="Make member" />
                      ) : null
                    ) : null}
                  </td>
                </tr>
              ) : null,
            )}
          </tbody>
        </table>
      </Card>
      <Card title="Agents">
        {agents.length === 0 ? (
          <EmptyState title="No live agents.">
            Bind a folder with <code>retasc bind</code>, or mint a key on the Keys page: each agent key shows here.
          </EmptyState>
        ) : (
          <table className="stack-md w-full border-collapse text-left text-sm">
            <thead>
              <tr className="border-b border-stone-300">
                <th scope="col" className={head}>Runtime</th>
                <th scope="col" className={head}>Key</th>
                <th scope="col" className={head}>Acts for</th>
                <th scope="col" className={head}>Project</th>
                <th scope="col" className={head}>Last used</th>
                <th scope="col"><span className="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {agents.map((a) =>
                a.kind === "agent" ? (
                  <tr key={a.memberId} className={row}>
                    <td className={`${cell} font-mono`} data-label="Runtime">{a.runtime}</td>
                    <td className={`${cell} font-mono`} data-label="Key">{a.keyPrefix}…</td>
                    <td className={cell} data-label="Acts for">{a.humanEmail}</td>
                    <td className={cell} data-label="Project">{a.projectPrefix ?? "any"}</td>
                    <td className={`${cell} tabular-nums`} data-label="Last used">{a.lastUsedAt ? stamp(a.lastUsedAt) : "never"}</td>
                    <td className={actions}>
                      {manages || a.userId === me.userId ? (
                        <Action intent="retire" memberId={a.memberId} label="Retire" tone="danger" />
                      ) : null}
                    </td>
                  </tr>
                ) : null,
              )}
            </tbody>
          </table>
        )}
      </Card>
      <Pages label="Member pages" first={cursor ? at({ cursor: null }) : null} next={nextCursor ? at({ cursor: nextCursor }) : null} />
      {manages ? (
        <Card title="Invites">
          {result?.invite ? (
            <div className="mb-4 flex flex-col gap-3" data-testid="new-invite">
              <Notice>
                Invite created for {result.invite.email ?? "whoever holds it"}, joining as {result.invite.role === "admin" ? "an admin" : "a member"}. It is shown
                once, works once, and expires {stamp(result.invite.expiresAt)}.{" "}
                {result.invite.mail?.emailed
                  ? `The link was emailed to ${result.invite.email}.`
                  : result.invite.mail
                    ? `It was not emailed (${result.invite.mail.reason}): send them the link yourself.`
                    : "Send them the link yourself."}
              </Notice>
              <SecretBox label="Invite code" value={result.invite.code} />
              <SecretBox label="They run" value={`${cliInstallCommand(origin)}\nretasc join ${result.invite.link}`} />
              <SecretBox label="Or open" value={result.invite.link} />
            </div>
          ) : null}
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
          {pending.length === 0 ? (
            <EmptyState title="No pending invites.">Invite someone above: the link is shown once, with a copy button.</EmptyState>
          ) : (
            <InviteTable title="Pending invites" invites={pending} />
          )}
          {past.length > 0 ? (
            <details className="mt-4">
              <summary className="cursor-pointer text-sm font-medium">
                Used, revoked and expired invites ({past.length}{invitesCursor || invitesNextCursor ? " on this page" : ""})
              </summary>
              <InviteTable title="Past invites" invites={past} />
            </details>
          ) : null}
          <Pages
            label="Invite pages"
            first={invitesCursor ? at({ invitesCursor: null }) : null}
            next={invitesNextCursor ? at({ invitesCursor: invitesNextCursor }) : null}
            nextLabel="Older invites"
          />
        </Card>
      ) : null}
    </div>
  );
}

/** Plain links, so a list pages without JavaScript. */
function Pages({ label, first, next, nextLabel = "Next page" }: { label: string; first: string | null; next: string | null; nextLabel?: string }) {
  if (!first && !next) return null;
  return (
    <nav aria-label={label} className="mt-4 flex gap-4 text-sm">
      {first ? <Link className="underline" to={first}>First page</Link> : null}
      {next ? <Link className="underline" to={next}>{nextLabel}</Link> : null}
    </nav>
  );
}

type InviteRow = Route.ComponentProps["loaderData"]["invites"][number];

function InviteTable({ title, invites }: { title: string; invites: InviteRow[] }) {
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
