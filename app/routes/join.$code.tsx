import { Form, redirect } from "react-router";
import type { Route } from "./+types/join.$code";
import { currentOrgCookie, requireUser } from "../auth.server.ts";
import { attempt } from "../errors.server.ts";
import { describeInvite, redeemInvite } from "../../server/orgs/invite-redeem.ts";
import { Button, ErrorNote } from "../components/ui.tsx";

export function meta() {
  return [{ title: "Join an org · Retasc" }];
}

/** The web side of an invite link: sign in (or up), then join with one click. */
export async function loader({ request, context, params }: Route.LoaderArgs) {
  const user = await requireUser(request, context);
  const invite = await describeInvite(context.services, params.code);
  return { user, invite };
}

export async function action({ request, context, params }: Route.ActionArgs) {
  const user = await requireUser(request, context);
  const result = await attempt(context.log, () => redeemInvite(context.services, { userId: user.id, code: params.code, via: "dash" }));
  if (!result.ok) return { error: result.error };
  return redirect("/dash", { headers: { "set-cookie": await currentOrgCookie.serialize(result.value.orgId) } });
}

export default function Join({ loaderData, actionData }: Route.ComponentProps) {
  const { user, invite } = loaderData;
  return (
    <main className="mx-auto flex max-w-md flex-col gap-6 px-6 py-16">
      <h1 className="text-2xl font-semibold">{invite ? `Join ${invite.orgName}` : "Invite not found"}</h1>
      <ErrorNote error={actionData?.error} />
      {!invite ? (
        <p>This invite link is not valid. Ask whoever invited you for a new one.</p>
      ) : invite.state !== "pending" ? (
        <p role="alert">
          This invite is {invite.state === "accepted" ? "already used" : invite.state}. Ask an owner or admin of {invite.orgName} for a new one.
        </p>
      ) : invite.email && invite.email !== user.email.toLowerCase() ? (
        <div role="alert" className="flex flex-col gap-3">
          <p>
            This invite is for <strong className="[overflow-wrap:anywhere]">{invite.email}</strong>, and you are signed in as{" "}
            <strong className="[overflow-wrap:anywhere]">{user.email}</strong>.
          </p>
          <p>
            Sign out and sign in (or create your account) as {invite.email}, then open the link again; or ask whoever invited you for an invite
            to your address.
          </p>
          <Form method="post" action={`/auth/sign-out?next=${encodeURIComponent(`/join/${invite.code}`)}`}>
            <Button tone="secondary">Sign out</Button>
          </Form>
        </div>
      ) : (
        <Form method="post" className="flex flex-col gap-4">
          <p>
            You are signed in as <strong className="[overflow-wrap:anywhere]">{user.email}</strong>. Joining makes you {invite.role === "admin" ? "an admin" : "a member"} of{" "}
            {invite.orgName}.
          </p>
          <div>
            <Button>Join {invite.orgName}</Button>
          </div>
        </Form>
      )}
    </main>
  );
}
