import { Form } from "react-router";
import { Button, Field, Select } from "../ui.tsx";

/**
 * A Shortcut API token, the team (its name, @mention or id) and the target: a dry run, then the
 * import of the team's stories and their epics. Shortcut has no project key, so a new project is
 * given its prefix here. The token field is a password field the server never fills.
 */
export function ShortcutImportForm(props: { projects: { id: string; prefix: string; name: string }[]; values: Record<string, string> }) {
  const { projects, values } = props;
  return (
    <Form method="post" className="flex flex-col gap-4" autoComplete="off">
      <input type="hidden" name="source" value="shortcut" />
      <Field label="Shortcut API token" name="apiToken" type="password" required autoComplete="off" hint="From Shortcut's Settings → Your account → API Tokens. Used for this import only, never stored; paste it again for each step without JavaScript." />
      <Field label="Shortcut team" name="team" required defaultValue={values.team} placeholder="Mobile" hint="The team's name, its @mention name, or its id." />
      <Select label="Into" name="target" defaultValue={values.target ?? "new"} options={[{ value: "new", label: "A new project" }, ...projects.map((p) => ({ value: p.id, label: `${p.prefix} · ${p.name}` }))]} />
      <Field label="New project's name" name="projectName" defaultValue={values.projectName} hint="Only for a new project. Empty: the team's name." />
      <Field label="New project's prefix" name="prefix" defaultValue={values.prefix} pattern="[A-Za-z][A-Za-z0-9]*" hint="Only for a new project: its issues are PREFIX-1 and on." />
      <div className="flex gap-2">
        <Button name="intent" value="dry-run" tone="secondary">
          Dry run
        </Button>
        <Button name="intent" value="start">
          Start import
        </Button>
      </div>
    </Form>
  );
}
