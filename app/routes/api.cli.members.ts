import type { Route } from "./+types/api.cli.members";
import { cliJson, cliOrgAction, cliQueryCtx } from "../cli-api.server.ts";
import { actorOf } from "../../server/orgs/access.ts";
import { createInvite, createInviteInput, inviteIdInput, listInvites, revokeInvite } from "../../server/orgs/invites.ts";
import { listMembers, memberIdInput, reactivateMember, setMemberScope, setMemberScopeInput, suspendMember } from "../../server/orgs/members.ts";

/** People and agents of the org; invites too for owners and admins; each a page at a time (`cursor`, `invitesCursor`). */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx, params } = await cliQueryCtx(request, context);
    const members = await listMembers(ctx, { cursor: params.get("cursor") ?? undefined });
    const actor = await actorOf(ctx);
    const invites = actor.role === "member" ? null : await listInvites(ctx, { cursor: params.get("invitesCursor") ?? undefined });
    return {
      members: members.members,
      invites: invites?.invites ?? null,
      ...(members.nextCursor ? { nextCursor: members.nextCursor } : {}),
      ...(invites?.nextCursor ? { invitesNextCursor: invites.nextCursor } : {}),
    };
  });
}

/** `{ orgId, action: "invite" | "revoke-invite" | "suspend" | "reactivate" | "scope", ... }` */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    invite: (ctx, input) => createInvite(ctx, createInviteInput.parse(input)),
    "revoke-invite": (ctx, input) => revokeInvite(ctx, inviteIdInput.parse(input)),
    suspend: (ctx, input) => suspendMember(ctx, memberIdInput.parse(input)),
    reactivate: (ctx, input) => reactivateMember(ctx, memberIdInput.parse(input)),
    scope: (ctx, input) => setMemberScope(ctx, setMemberScopeInput.parse(input)),
  });
}
