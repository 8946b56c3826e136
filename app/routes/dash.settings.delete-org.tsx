import { Form, redirect } from "react-router";
import type { Route } from "./+types/dash.settings.delete-org";
import { currentOrgCookie, requireMember } from "../auth.server.ts";
import { Button, Card, ErrorNote, Field, Notice } from "../components/ui.tsx";
import { attempt } from "../errors.server.ts";
import { readForm } from "../forms.server.ts";
import { deleteOrg } from "../../server/orgs/delete.ts";
import "../components/dash/dash.css";

export function meta() {
  return [{ title: "Delete org · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  const { membership, org } = await requireMember(request, context);
  return { isOwner: membership.role === "owner", orgId: org.orgId, orgName: org.name };
}

/**
 * Deletes the Dash's current org (server/orgs/delete.ts: the owner's, with its name typed). The
 * form names the org it was shown for, so switching orgs in another tab deletes nothing else.
 */
export async function action({ request, context }: Route.ActionArgs) {
  const { ctx, org } = await requireMember(request, context);
  const form = await readForm(request);
  if (String(form.get("orgId") ?? "") !== org.orgId) {
    return { error: { code: "CONFLICT", message: "the Dash switched to another org since this page was shown", hint: "Reload the page; nothing was deleted." } };
  }
  const result = await attempt(context.log, () => deleteOrg(ctx, { confirmName: String(form.get("confirmName") ?? "") }));
  if (!result.ok) return { error: result.error };
  // The cookie named the deleted org: the Dash opens another of the person's orgs, or offers a new one.
  return redirect("/dash", { headers: { "set-cookie": await currentOrgCookie.serialize("", { maxAge: 0 }) } });
}

export default function DeleteOrg({ loaderData, actionData }: Route.ComponentProps) {
  const { isOwner, orgId, orgName } = loaderData;
  return (
    <div className="flex flex-col gap-6">
      <h1 className="text-2xl font-semibold">Delete {orgName}</h1>
      {!isOwner ? (
        <Notice>Only an owner deletes the org.</Notice>
      ) : (
        <>
          <Card title="First, export it">
            <p className="text-sm">
              Deleting cannot be undone, not even from a backup: the org's data key is destroyed first, so nothing of it can be
              read again.{" "}
              <a className="font-medium underline" href="/dash/settings/transfer/export?format=json" download>
                Download everything (JSON)
              </a>{" "}
              <span className="text-muted">to keep a copy that imports back as a new org.</span>
            </p>
          </Card>
          <Card title="Delete the org">
            <div className="flex flex-col gap-3">
              <p className="text-sm text-muted">
                Every agent key and OAuth token of {orgName} stops working at once, its members are signed out of it, its jobs,
                connectors and notifications stop, and its issues, history and files are removed in the background.
              </p>
              <ErrorNote error={actionData?.error} />
              <Form method="post" className="flex flex-col gap-4">
                <input type="hidden" name="orgId" value={orgId} />
                <Field label={`Type ${orgName} to confirm`} name="confirmName" required autoComplete="off" />
                <Button tone="danger">Delete {orgName} for good</Button>
              </Form>
            </div>
          </Card>
        </>
      )}
    </div>
  );
}
