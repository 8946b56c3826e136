import { Form } from "react-router";
import { Field } from "../ui.tsx";
import { ImportTarget } from "./import-target.tsx";

/**
 * An Asana personal access token, the project (its gid or its URL) and the target: a dry run,
 * then the import. Asana has no project key, so a new project is given its prefix here. The
 * token field is a password field the server never fills.
 */
export function AsanaImportForm(props: { projects: { id: string; prefix: string; name: string }[]; values: Record<string, string> }) {
  const { projects, values } = props;
  return (
    <Form method="post" className="flex flex-col gap-4" autoComplete="off">
      <input type="hidden" name="source" value="asana" />
      <Field label="Asana personal access token" name="accessToken" type="password" required autoComplete="off" hint="From Asana's My settings → Apps → Developer apps. Used for this import only, never stored; paste it again for each step without JavaScript." />
      <Field label="Asana project" name="projectGid" required defaultValue={values.projectGid} placeholder="https://app.asana.com/0/1200000000000000/list" hint="The project's URL, or its gid (the digits after /project/ or /0/)." />
      <ImportTarget projects={projects} values={values} nameHint="Only for a new project. Empty: the Asana project's name." askPrefix />
    </Form>
  );
}
