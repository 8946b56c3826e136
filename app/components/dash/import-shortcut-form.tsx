import { Form } from "react-router";
import { Field } from "../ui.tsx";
import { ImportTarget } from "./import-target.tsx";

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
      <ImportTarget projects={projects} values={values} nameHint="Only for a new project. Empty: the team's name." askPrefix />
    </Form>
  );
}
