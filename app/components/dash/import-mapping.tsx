/**
 * The owner's status and priority mapping, alike for every source: one row per name the source
 * gives (a Jira status, an Asana section, a CSV cell), what it becomes here, and how many issues
 * carry it. Its selects belong to the source's form (`form={IMPORT_FORM}`) wherever the table is
 * drawn, so the dry run's mapping is what a second dry run and the import are sent, with or
 * without JavaScript. Every row is sent, so the import takes the mapping as shown.
 */
import type { IssueStatus } from "../../../constants/statuses.ts";

export const IMPORT_FORM = "import-form";

const statusChoices = ["todo", "doing", "done", "canceled"];
const priorityWords = ["none", "urgent", "high", "medium", "low"];
/** The value of a name the source maps two ways (Jira's Done by its resolution): no override, "keep as is". */
const AS_THE_SOURCE_SAYS = "";

export interface MappingRow {
  from: string;
  /** Ours: a status, or a priority as its number; "" for a name left to the source's own mapping. */
  to: string | number;
  /** Known from a dry run; absent for a mapping carried back from a refused step. */
  issues?: number;
}

/** The form's `status.<name>` and `priority.<name>` fields as a source's `mapping` (none when the form has none); the services' schemas check the values. */
export function mappingOf(form: Iterable<[string, FormDataEntryValue]>): { statuses?: Record<string, IssueStatus>; priorities?: Record<string, number> } | undefined {
  const statuses: Record<string, IssueStatus> = {};
  const priorities: Record<string, number> = {};
  for (const [name, value] of form) {
    if (typeof value !== "string" || value === AS_THE_SOURCE_SAYS) continue;
    if (name.startsWith("status.")) statuses[name.slice("status.".length)] = value as IssueStatus;
    else if (name.startsWith("priority.")) priorities[name.slice("priority.".length)] = Number(value);
  }
  const mapping = { ...(Object.keys(statuses).length > 0 ? { statuses } : {}), ...(Object.keys(priorities).length > 0 ? { priorities } : {}) };
  return Object.keys(mapping).length > 0 ? mapping : undefined;
}

/** The mapping a form carried (an answer that is no dry run: a refusal, the re-import warning), as rows to draw again. */
export function carriedMapping(values: Record<string, string>): { statuses: MappingRow[]; priorities: MappingRow[] } {
  const rows = (prefix: string) => Object.entries(values).filter(([k]) => k.startsWith(prefix)).map(([k, to]) => ({ from: k.slice(prefix.length), to }));
  return { statuses: rows("status."), priorities: rows("priority.") };
}

/** Rows of one name, once each, with the ways it maps. */
function byName(rows: MappingRow[]) {
  const names = new Map<string, { to: Set<string>; issues: number | undefined; ways: string[] }>();
  for (const r of rows) {
    const entry = names.get(r.from) ?? { to: new Set<string>(), issues: undefined, ways: [] };
    entry.to.add(String(r.to));
    if (r.issues !== undefined) {
      entry.issues = (entry.issues ?? 0) + r.issues;
      entry.ways.push(`${r.to} ${r.issues}`);
    }
    names.set(r.from, entry);
  }
  return [...names].map(([from, e]) => ({ from, to: e.to.size === 1 ? [...e.to][0]! : AS_THE_SOURCE_SAYS, issues: e.issues, ways: e.ways }));
}

function MappingTable(props: { kind: "status" | "priority"; caption: string; rows: MappingRow[]; choices: { value: string; label: string }[]; word: (to: string) => string }) {
  const { kind, rows, choices } = props;
  return (
    <table className="w-full text-left">
      <caption className="text-left font-medium">{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">There</th>
          <th scope="col">Here</th>
          <th scope="col">Issues</th>
        </tr>
      </thead>
      <tbody>
        {byName(rows).map((r) => (
          <tr key={r.from}>
            <td>{r.from || "(none)"}</td>
            <td>
              {kind === "priority" && r.from === "" ? (
                // An issue without a priority at the source has none here: the sources map names, and it has none.
                props.word(r.to)
              ) : (
                <select
                  key={`${r.from}\u0000${r.to}`}
                  form={IMPORT_FORM}
                  name={`${kind}.${r.from}`}
                  aria-label={`${props.caption}: ${r.from || "(none)"}`}
                  defaultValue={r.to}
                  className="w-full max-w-48 rounded border border-stone-300 bg-white px-2 py-1"
                >
                  {r.to === AS_THE_SOURCE_SAYS ? <option value={AS_THE_SOURCE_SAYS}>keep as is</option> : null}
                  {choices.map((c) => (
                    <option key={c.value} value={c.value}>
                      {c.label}
                    </option>
                  ))}
                </select>
              )}
            </td>
            <td>{r.issues === undefined ? "" : r.ways.length > 1 ? `${r.issues} (${r.ways.join(", ")})` : r.issues}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The status and priority tables, each name's choice a select of the source's form. */
export function ImportMapping(props: { statuses: MappingRow[]; priorities: MappingRow[] }) {
  if (props.statuses.length + props.priorities.length === 0) return null;
  return (
    <>
      <p>Change what a status or priority becomes here: the next dry run and the import use it.</p>
      {props.statuses.length > 0 ? <MappingTable kind="status" caption="Statuses" rows={props.statuses} choices={statusChoices.map((s) => ({ value: s, label: s }))} word={(s) => s} /> : null}
      {props.priorities.length > 0 ? (
        <MappingTable kind="priority" caption="Priorities" rows={props.priorities} choices={priorityWords.map((p, n) => ({ value: String(n), label: p }))} word={(p) => priorityWords[Number(p)] ?? p} />
      ) : null}
    </>
  );
}
