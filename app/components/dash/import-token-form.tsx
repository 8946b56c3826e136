import { Form } from "react-router";
import { Field } from "../ui.tsx";
import { IMPORT_FORM } from "./import-mapping.tsx";
import { ImportTarget } from "./import-target.tsx";

/**
 * The sources read with one token and one choice of what to read (Asana, Shortcut, ClickUp): the
 * token, the project, team, List or Space, and the target, then a dry run or the import. None
 * has a project key, so a new project is given its prefix here. The token field is a password
 * field the server never fills.
 */
export const TOKEN_SOURCES = {
  asana: {
    title: "Import a project",
    about: "An Asana project's tasks and subtasks, dependencies, comments, tags and files, with their sections as statuses and their times.",
    token: { name: "accessToken", label: "Asana personal access token", hint: "From Asana's My settings → Apps → Developer apps." },
    what: { name: "projectGid", label: "Asana project", placeholder: "https://app.asana.com/0/1200000000000000/list", hint: "The project's URL, or its gid (the digits after /project/ or /0/)." },
    emptyName: "the Asana project's name",
  },
  shortcut: {
    title: "Import a team or an epic",
    about: "A Shortcut team's stories and their epics, or one epic and its stories, with story links, threaded comments, labels, tasks and files, their workflow states and times.",
    token: { name: "apiToken", label: "Shortcut API token", hint: "From Shortcut's Settings → Your account → API Tokens." },
    what: { name: "team", label: "Shortcut team", placeholder: "Mobile", hint: "The team's name, its @mention name, or its id. Leave it empty to import an epic instead." },
    // One epic instead of a team: the epic as a container, its stories (whatever their team) inside it.
    or: { name: "epic", label: "Or a Shortcut epic", placeholder: "Checkout revamp", hint: "The epic's id, its URL (…/epic/<id>/…) or its name: the epic and its stories, whatever their team." },
    emptyName: "the team's or epic's name",
  },
  clickup: {
    title: "Import a List or Space",
    about: "A ClickUp List's or Space's tasks and subtasks, dependencies, threaded comments, tags, checklists and files, with their statuses, priorities, due dates and times.",
    token: { name: "apiToken", label: "ClickUp personal API token", hint: "From ClickUp's Settings → Apps → API Token (it starts pk_)." },
    what: { name: "location", label: "ClickUp List or Space", placeholder: "https://app.clickup.com/9012345678/v/li/901200000101", hint: "The List's or Space's URL (…/v/li/<id> or …/v/s/<id>), or list:<id> or space:<id>." },
    emptyName: "the List's or Space's name",
  },
} as const;
export type TokenSource = keyof typeof TOKEN_SOURCES;

/** A second field a source may be read by instead of its first (Shortcut: an epic instead of a team); the service takes exactly one. */
export function alternativeOf(source: TokenSource): { name: string; label: string; placeholder: string; hint: string } | null {
  const entry = TOKEN_SOURCES[source];
  return "or" in entry ? entry.or : null;
}

export function TokenImportForm(props: { source: TokenSource; projects: { id: string; prefix: string; name: string }[]; values: Record<string, string> }) {
  const { source, projects, values } = props;
  const { token, what, emptyName } = TOKEN_SOURCES[source];
  const or = alternativeOf(source);
  return (
    <Form id={IMPORT_FORM} method="post" className="flex flex-col gap-4" autoComplete="off">
      <input type="hidden" name="source" value={source} />
      <Field label={token.label} name={token.name} type="password" required autoComplete="off" hint={`${token.hint} Used for this import only, never stored; paste it again for each step without JavaScript.`} />
      <Field label={what.label} name={what.name} required={!or} defaultValue={values[what.name]} placeholder={what.placeholder} hint={what.hint} />
      {or ? <Field label={or.label} name={or.name} defaultValue={values[or.name]} placeholder={or.placeholder} hint={or.hint} /> : null}
      <ImportTarget projects={projects} values={values} nameHint={`Only for a new project. Empty: ${emptyName}.`} askPrefix keepable />
    </Form>
  );
}
