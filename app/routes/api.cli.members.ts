import type { Route } from "./+types/api.cli.members";
import { cliCtx, cliJson, methodNotAllowed, readBody, requireCliUser } from "../cli-api.server.ts";
import { actorOf } from "../../server/orgs/access.ts";
import { createInvite, createInviteInput, inviteIdInput, listInvites, revokeInvite } from "../../server/orgs/invites.ts";
import { listMembers, memberIdInput, reactivateMember, suspendMember } from "../../server/orgs/members.ts";

/** People and agents of the org; invites too for owners and admins. */
export function loader({ request, context }: Route.LoaderArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const ctx = await cliCtx(context, user, new URL(request.url).searchParams.get("orgId"));
    const { members } = await listMembers(ctx);
    const actor = await actorOf(ctx);
    const invites = actor.role === "member" ? null : (await listInvites(ctx)).invites;
    return { members, invites };
  });
}

/** `{ orgId, action: "invite" | "revoke-invite" | "suspend" | "reactivate", ... }` */
export function action({ request, context }: Route.ActionArgs) {
  return cliJson(context, async () => {
    const user = await requireCliUser(request, context);
    const { orgId, action, ...input } = await readBody(request);
    const ctx = await cliCtx(context, user, orgId);
    switch (action) {
      case "invite":
        return createInvite(ctx, createInviteInput.parse(input));
      case "revoke-invite":
        return revokeInvite(ctx, inviteIdInput.parse(input));
      case "suspend":
        return suspendMember(ctx, memberIdInput.parse(input));
      case "reactivate":
        return reactivateMember(ctx, memberIdInput.parse(input));
      default:
        return methodNotAllowed();
    }
  });
}
