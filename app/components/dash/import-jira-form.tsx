import { Form } from "react-router";
import { Field } from "../ui.tsx";
import { IMPORT_FORM } from "./import-mapping.tsx";
import { ImportTarget } from "./import-target.tsx";

/**
 * A Jira site, the account's email and API token (Cloud) or a personal access token alone (Data
 * Center, told apart by the site), the project's key and the target: a dry run, then the import.
 * The token field is a password field the server never fills.
 */
export function JiraImportForm(props: { projects: { id: string; prefix: string; name: string }[]; values: Record<string, string> }) {
  const { projects, values } = props;
  return (
    <Form id={IMPORT_FORM} method="post" className="flex flex-col gap-4" autoComplete="off">
      <input type="hidden" name="source" value="jira" />
      <Field label="Jira site" name="site" type="url" required defaultValue={values.site} placeholder="https://your-team.atlassian.net" hint="Your Jira site's https address: Cloud (your-team.atlassian.net) or Data Center." />
      <Field label="Atlassian account email" name="email" type="email" defaultValue={values.email} autoComplete="off" hint="Jira Cloud only; empty for a Data Center site." />
      <Field label="Jira API token" name="apiToken" type="password" required autoComplete="off" hint="Cloud: from id.atlassian.com → Security → API tokens. Data Center: a personal access token from your profile → Personal Access Tokens. Used for this import only, never stored; paste it again for each step without JavaScript." />
      <Field label="Jira project key" name="projectKey" required defaultValue={values.projectKey} placeholder="ENG" pattern="[A-Za-z][A-Za-z0-9_]*" />
      <ImportTarget projects={projects} values={values} newLabel="A new project, its prefix the Jira key" nameHint="Only for a new project. Empty: the Jira project's key." askPrefix={false} keepable />
    </Form>
  );
}
