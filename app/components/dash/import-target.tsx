import { Button, Field, Select } from "../ui.tsx";
import { focusRing } from "./bits.tsx";

/** Asks to keep the pasted credential for importing again (decision 094); read only by the import's start. */
export function KeepCredential({ values }: { values: Record<string, string> }) {
  return (
    <label className="flex items-center gap-2 text-sm">
      <input type="checkbox" name="keepCredential" defaultChecked={values.keepCredential === "on"} className={focusRing} />
      Keep the credential to import again later (sealed under the org's key; forget it any time)
    </label>
  );
}

/**
 * Where a tracker's import goes and the two steps it takes, alike for every source's form: into a
 * new project (its name, and its prefix when the source has no key of its own) or an existing one,
 * then a dry run or the import itself.
 */
export function ImportTarget(props: {
  projects: { id: string; prefix: string; name: string }[];
  values: Record<string, string>;
  /** How the "new project" choice reads (Jira's takes the project's key as prefix). */
  newLabel?: string;
  /** What an empty name becomes, said under the name field. */
  nameHint?: string;
  /** Whether a new project asks for its prefix (a source with no key of its own). */
  askPrefix: boolean;
  /** Whether the form offers to keep its credential (every source with one). */
  keepable?: boolean;
}) {
  const { projects, values } = props;
  return (
    <>
      <Select label="Into" name="target" defaultValue={values.target ?? "new"} options={[{ value: "new", label: props.newLabel ?? "A new project" }, ...projects.map((p) => ({ value: p.id, label: `${p.prefix} · ${p.name}` }))]} />
      <Field label="New project's name" name="projectName" defaultValue={values.projectName} hint={props.nameHint} />
      {props.askPrefix ? <Field label="New project's prefix" name="prefix" defaultValue={values.prefix} pattern="[A-Za-z][A-Za-z0-9]*" hint="Only for a new project: its issues are PREFIX-1 and on." /> : null}
      {props.keepable ? <KeepCredential values={values} /> : null}
      <div className="flex gap-2">
        <Button name="intent" value="dry-run" tone="secondary">
          Dry run
        </Button>
        <Button name="intent" value="start">
          Start import
        </Button>
      </div>
    </>
  );
}
