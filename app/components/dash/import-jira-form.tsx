import { Form } from "react-router";
import { Field } from "../ui.tsx";
import { ImportTarget } from "./import-target.tsx";

/**
 * A Jira site, the account's email and API token, the project's key and the target: a dry run,
 * then the import. The token field is a password field the server never fills.
 */
export function JiraImportForm(props: { projects: { id: string; prefix: string; name: string }[]; values: Record<string, string> }) {
  const { projects, values } = props;
  return (
    <Form method="post" className="flex flex-col gap-4" autoComplete="off">
      <input type="hidden" name="source" value="jira" />
      <Field label="Jira site" name="site" type="url" required defaultValue={values.site} placeholder="https://your-team.atlassian.net" hint="Your Jira Cloud site's https address." />
      <Field label="Atlassian account email" name="email" type="email" required defaultValue={values.email} autoComplete="off" />
      <Field label="Jira API token" name="apiToken" type="password" required autoComplete="off" hint="From id.atlassian.com → Security → API tokens. Used for this import only, never stored; paste it again for each step without JavaScript." />
      <Field label="Jira project key" name="projectKey" required defaultValue={values.projectKey} placeholder="ENG" pattern="[A-Za-z][A-Za-z0-9_]*" />
      <ImportTarget projects={projects} values={values} newLabel="A new project, its prefix the Jira key" nameHint="Only for a new project. Empty: the Jira project's key." askPrefix={false} />
    </Form>
  );
}
