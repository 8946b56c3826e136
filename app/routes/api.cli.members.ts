import type { Route } from "./+types/api.cli.members";
import { cliJson, cliOrgAction, cliQueryCtx } from "../cli-api.server.ts";
import { actorOf } from "../../server/orgs/access.ts";
import { createInvite, createInviteInput, inviteIdInput, listInvites, revokeInvite } from "../../server/orgs/invites.ts";
import { listMembers, memberIdInput, reactivateMember, suspendMember } from "../../server/orgs/members.ts";

/** People and agents of the org; invites too for owners and admins. */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const { ctx } = await cliQueryCtx(request, context);
    const { members } = await listMembers(ctx);
    const actor = await actorOf(ctx);
    const invites = actor.role === "member" ? null : (await listInvites(ctx)).invites;
    return { members, invites };
  });
}

/** `{ orgId, action: "invite" | "revoke-invite" | "suspend" | "reactivate", ... }` */
export function action({ request, context }: Route.ActionArgs) {
  return cliOrgAction(request, context, {
    invite: (ctx, input) => createInvite(ctx, createInviteInput.parse(input)),
    "revoke-invite": (ctx, input) => revokeInvite(ctx, inviteIdInput.parse(input)),
    suspend: (ctx, input) => suspendMember(ctx, memberIdInput.parse(input)),
    reactivate: (ctx, input) => reactivateMember(ctx, memberIdInput.parse(input)),
  });
}
