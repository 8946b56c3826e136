import { Form, redirect } from "react-router";
import type { Route } from "./+types/dash.orgs.new";
import { currentOrgCookie, requireUser } from "../auth.server.ts";
import { toErrorBody } from "../errors.server.ts";
import { withPrincipal } from "../../server/with-principal.ts";
import { humanPrincipal } from "../../server/orgs/access.ts";
import { addProject, createOrgFor, createOrgInput, createProjectInput } from "../../server/orgs/account.ts";
import { Button, ErrorNote, Field } from "../components/ui.tsx";
import { readForm } from "../forms.server.ts";

export function meta() {
  return [{ title: "Create an org · Retasc" }];
}

export async function loader({ request, context }: Route.LoaderArgs) {
  await requireUser(request, context);
  return null;
}

/**
 * Creates the org and, when named, its first project in one step, so a newcomer lands on the
 * Fleet page with the next step (connecting an agent) in front of them. Without a project it
 * goes to the Projects page, which asks for one.
 */
export async function action({ request, context }: Route.ActionArgs) {
  const user = await requireUser(request, context);
  const form = await readForm(request);
  const values = {
    name: String(form.get("name") ?? ""),
    projectName: String(form.get("projectName") ?? "").trim(),
    prefix: String(form.get("prefix") ?? "").trim(),
  };
  try {
    const orgInput = createOrgInput.parse({ name: values.name });
    // Checked before the org exists, so a bad prefix never leaves an org behind.
    const projectInput = values.projectName || values.prefix ? createProjectInput.parse({ name: values.projectName, prefix: values.prefix }) : null;
    const org = await createOrgFor(context.services, user.id, orgInput, "dash");
    if (projectInput) await addProject(withPrincipal(context.services, humanPrincipal(org.orgId, user.id, "dash")), projectInput);
    return redirect(projectInput ? "/dash" : "/dash/settings/projects", {
      headers: { "set-cookie": await currentOrgCookie.serialize(org.orgId) },
    });
  } catch (error) {
    return { error: toErrorBody(error, context.log).body, values };
  }
}

export default function NewOrg({ actionData }: Route.ComponentProps) {
  const values = actionData?.values;
  return (
    <div className="flex max-w-md flex-col gap-6">
      <h1 className="text-2xl font-semibold">Create an org</h1>
      <p className="text-stone-700">
        You will be its owner. Invited by a team? Redeem their invite instead (<code>retasc join &lt;code&gt;</code> or the
        link they sent): creating an org here puts your work where they cannot see it.
      </p>
      <ErrorNote error={actionData?.error} />
      <Form method="post" className="flex flex-col gap-4">
        <Field label="Org name" name="name" required placeholder="Acme" defaultValue={values?.name} />
        <fieldset className="flex flex-col gap-4 rounded border border-line p-4">
          <legend className="px-1 text-sm font-medium">First project</legend>
          <p className="text-sm text-muted">Issues and agent keys belong to a project. Leave both empty to add one later.</p>
          <Field label="Project name" name="projectName" placeholder="Web" defaultValue={values?.projectName} />
          <Field
            label="Issue prefix"
            name="prefix"
            placeholder="WEB"
            defaultValue={values?.prefix}
            hint="2–10 letters or digits, starting with a letter: issues are named WEB-1, WEB-2, …"
          />
        </fieldset>
        <Button>Create org</Button>
      </Form>
    </div>
  );
}
