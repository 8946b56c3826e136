import { Form, redirect } from "react-router";
import type { Route } from "./+types/dash.orgs.new";
import { currentOrgCookie, requireUser } from "../auth.server.ts";
import { toErrorBody } from "../errors.server.ts";
import { createOrgFor } from "../../server/orgs/account.ts";
import { Button, ErrorNote, Field } from "../components/ui.tsx";
import { readForm } from "../forms.server.ts";

export async function loader({ request, context }: Route.LoaderArgs) {
  await requireUser(request, context);
  return null;
}

export async function action({ request, context }: Route.ActionArgs) {
  const user = await requireUser(request, context);
  const form = await readForm(request);
  try {
    const org = await createOrgFor(context.services, user.id, { name: String(form.get("name") ?? "") }, "dash");
    return redirect("/dash/settings/projects", { headers: { "set-cookie": await currentOrgCookie.serialize(org.orgId) } });
  } catch (error) {
    return { error: toErrorBody(error, context.log).body };
  }
}

export default function NewOrg({ actionData }: Route.ComponentProps) {
  return (
    <div className="flex max-w-md flex-col gap-6">
      <h1 className="text-2xl font-semibold">Create an org</h1>
      <p className="text-stone-700">
        You will be its owner. Invited by a team? Redeem their invite instead (<code>retasc join &lt;code&gt;</code> or the
        link they sent): creating an org here puts your work where they cannot see it.
      </p>
      <ErrorNote error={actionData?.error} />
      <Form method="post" className="flex flex-col gap-4">
        <Field label="Org name" name="name" required placeholder="Acme" />
        <Button>Create org</Button>
      </Form>
    </div>
  );
}
