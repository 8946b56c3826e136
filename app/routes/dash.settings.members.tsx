import type { Route } from "./+types/dash.settings.members";
import { requireMember } from "../auth.server.ts";
import { publicBaseUrl } from "../../server/http/origin.ts";
import { attempt } from "../errors.server.ts";
import { inviteAndMail } from "../../server/orgs/invite-mail.ts";
import { listInvites, revokeInvite } from "../../server/orgs/invites.ts";
import { emailConfigured } from "../../server/outbound/email.ts";
import { listMembers, reactivateMember, retireMember, setMemberRole, setMemberScope, suspendMember } from "../../server/orgs/members.ts";
import { listProjects } from "../../server/orgs/projects.ts";
import { Card, EmptyState, ErrorNote, Notice } from "../components/ui.tsx";
import { InviteForm, InviteTable, NewInviteNote } from "../components/dash/member-invites.tsx";
import { AgentTable, Pages, PeopleTable } from "../components/dash/members.tsx";
import "../components/dash/dash.css";
import { readForm } from "../forms.server.ts";
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

export default function Members({ loaderData, actionData }: Route.ComponentProps) {
  const { members, nextCursor, cursor, invites, invitesNextCursor, invitesCursor, projects, me, manages, mails, origin } = loaderData;
  const at = (position: { cursor?: string | null; invitesCursor?: string | null }) => {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries({ cursor, invitesCursor, ...position })) if (value) query.set(name, value);
    return `?${query}`;
  };
  const pending = invites.filter((i) => i.state === "pending");
  const past = invites.filter((i) => i.state !== "pending");
  const people = members.filter((m): m is Extract<typeof m, { kind: "human" }> => m.kind === "human");
  const agents = members.filter((m): m is Extract<typeof m, { kind: "agent" }> => m.kind === "agent");
  const result = actionData && "invite" in actionData ? actionData : null;
  return (
    <div className="flex flex-col gap-8">
      <h1 className="text-2xl font-semibold">Members</h1>
      <ErrorNote error={actionData?.error} />
      {actionData && "done" in actionData && actionData.done ? <Notice>{actionData.done}</Notice> : null}
      <PeopleTable people={people} projects={projects} me={me} manages={manages} />
      <AgentTable agents={agents} me={me} manages={manages} />
      <Pages label="Member pages" first={cursor ? at({ cursor: null }) : null} next={nextCursor ? at({ cursor: nextCursor }) : null} />
      {manages ? (
        <Card title="Invites">
          {result?.invite ? <NewInviteNote invite={result.invite} origin={origin} /> : null}
          <InviteForm me={me} projects={projects} mails={mails} />
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
