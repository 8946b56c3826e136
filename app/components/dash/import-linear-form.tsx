import { Form } from "react-router";
import { stamp } from "./format.ts";
import { Button, Field, Select } from "../ui.tsx";
import { IMPORT_FORM } from "./import-mapping.tsx";
import { KeepCredential } from "./import-target.tsx";

interface Team {
  id: string;
  key: string;
  name: string;
  issueCount: number;
  lastImportAt: string | null;
}

/**
 * Paste the key, list its teams, pick one and the target, then a dry run (its mapping the owner
 * may change) or the import. The key field is a password field the server never fills: with JS
 * the browser keeps what was pasted between the steps; without, the page asks for it again (it
 * is kept nowhere).
 */
export function LinearKeyForm(props: {
  teams: Team[] | null;
  projects: { id: string; prefix: string; name: string }[];
  confirm: { teamId: string; lastImportAt: string } | null;
  values: Record<string, string>;
}) {
  const { teams, projects, confirm, values } = props;
  const keys = new Set(teams?.map((t) => t.key.toUpperCase()));
  const earlier = projects.filter((p) => keys.has(p.prefix));
  const confirming = teams?.find((t) => t.id === confirm?.teamId);
  // The team checked at first (the one a dry run was of), and into the project an earlier import of it made, if any.
  const picked = confirming ?? teams?.find((t) => t.id === values.teamId) ?? teams?.[0];
  return (
    <Form id={IMPORT_FORM} method="post" className="flex flex-col gap-4" autoComplete="off">
      <Field
        label="Linear API key"
        name="apiKey"
        type="password"
        required
        autoComplete="off"
        hint="A personal API key from Linear's Settings → Security & access. Used for this import only, never stored; after a reload without JavaScript, paste it again."
      />
      <div>
        <Button name="intent" value="teams" tone={teams ? "secondary" : "primary"}>
          Show teams
        </Button>
      </div>
      {teams ? (
        teams.length === 0 ? (
          <p className="text-sm">This key sees no teams.</p>
        ) : (
          <>
            <fieldset className="flex flex-col gap-2">
              <legend className="mb-1 text-sm font-medium text-stone-800">Team</legend>
              {teams.map((t) => (
                <label key={t.id} className="flex flex-wrap items-baseline gap-2 text-sm">
                  <input type="radio" name="teamId" value={t.id} defaultChecked={t.id === picked?.id} />
                  <span className="font-medium">
                    {t.key} · {t.name}
                  </span>
                  <span className="text-muted">
                    {t.issueCount} issues{t.lastImportAt ? `, last imported ${stamp(t.lastImportAt)}` : ""}
                  </span>
                </label>
              ))}
            </fieldset>
            <Select
              label="Into"
              name="target"
              defaultValue={values.target ?? earlier.find((p) => p.prefix === picked?.key.toUpperCase())?.id ?? "new"}
              options={[{ value: "new", label: "A new project" }, ...earlier.map((p) => ({ value: p.id, label: `${p.prefix} · ${p.name} (an earlier import of ${p.prefix})` }))]}
            />
            <Field label="New project's name" name="projectName" defaultValue={values.projectName} hint="Only for a new project; its prefix is the team's key. Empty: the team's name." />
            {confirm ? (
              <div role="alert" className="flex flex-col gap-2 rounded border border-amber-300 bg-amber-50 p-3 text-sm text-amber-950" data-testid="reimport-warning">
                <p className="font-medium">
                  {confirming ? `${confirming.key} was` : "This team was"} last imported {stamp(confirm.lastImportAt)}. Importing it again overwrites edits made in Retasc to imported
                  fields (titles, descriptions, states, priorities, estimates, due dates, labels, comments).
                </p>
                <label className="flex items-center gap-2">
                  <input type="checkbox" name="confirm" /> Overwrite them
                </label>
              </div>
            ) : null}
            <KeepCredential values={values} />
            <div className="flex gap-2">
              <Button name="intent" value="dry-run" tone="secondary">
                Dry run
              </Button>
              <Button name="intent" value="start">
                {confirm ? "Import again" : "Start import"}
              </Button>
            </div>
          </>
        )
      ) : null}
    </Form>
  );
}
