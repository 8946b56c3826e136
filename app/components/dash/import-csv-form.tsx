import { Form } from "react-router";
import { Button, Field, Select } from "../ui.tsx";
import { IMPORT_FORM } from "./import-mapping.tsx";
import { ImportTarget } from "./import-target.tsx";

export interface CsvPreview {
  columns: string[];
  rows: Record<string, string>[];
  rowCount: number;
  mapping: { columns: Record<string, string | undefined> };
  statuses: Record<string, string>;
  priorities: Record<string, number>;
}

const fields: [string, string][] = [
  ["title", "Title (required)"],
  ["id", "Row id (for re-imports, parents, blockers)"],
  ["body", "Description"],
  ["status", "Status"],
  ["priority", "Priority"],
  ["dueDate", "Due date"],
  ["labels", "Labels"],
  ["assignee", "Assignee"],
  ["author", "Author"],
  ["createdAt", "Created"],
  ["updatedAt", "Updated"],
  ["parent", "Parent (a row id)"],
  ["blockedBy", "Blocked by (row ids)"],
];

/**
 * A CSV in two steps: the file, then its preview with a column picked for each field (guessed
 * from the header), then a dry run (whose mapping of the status and priority values the owner
 * changes, as for every source) or the import. The file's text rides along in the form between
 * the steps, so nothing is kept on the server.
 */
export function CsvImportForm(props: { projects: { id: string; prefix: string; name: string }[]; preview: CsvPreview | null; csv: string | null; values: Record<string, string> }) {
  const { projects, preview, csv, values } = props;
  if (!preview || csv === null) {
    return (
      <Form method="post" encType="multipart/form-data" className="flex flex-col gap-4">
        <input type="hidden" name="source" value="csv" />
        <label className="flex flex-col gap-1 text-sm font-medium text-stone-800" htmlFor="field-file">
          CSV file
          <input id="field-file" name="file" type="file" accept=".csv,text/csv" required />
        </label>
        <div>
          <Button name="intent" value="preview">
            Preview
          </Button>
        </div>
      </Form>
    );
  }
  const columnOptions = [{ value: "", label: "(none)" }, ...preview.columns.map((c) => ({ value: c, label: c }))];
  return (
    <Form id={IMPORT_FORM} method="post" className="flex flex-col gap-4" data-testid="csv-mapping">
      <input type="hidden" name="source" value="csv" />
      <textarea name="csv" defaultValue={csv} hidden readOnly aria-hidden="true" tabIndex={-1} />
      <p className="text-sm">{preview.rowCount} rows. The first of them:</p>
      <div className="overflow-x-auto">
        <table className="text-left text-xs">
          <thead>
            <tr>
              {preview.columns.map((c) => (
                <th key={c} scope="col" className="pr-3">
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {preview.rows.map((r, n) => (
              <tr key={n}>
                {preview.columns.map((c) => (
                  <td key={c} className="pr-3">
                    {(r[c] ?? "").slice(0, 80)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <fieldset className="grid gap-3 sm:grid-cols-2">
        <legend className="mb-1 text-sm font-medium text-stone-800">Columns</legend>
        {fields.map(([field, label]) => (
          <Select key={field} label={label} name={`column.${field}`} defaultValue={values[`column.${field}`] ?? preview.mapping.columns[field] ?? ""} options={columnOptions} />
        ))}
      </fieldset>
      <Field label="File name" name="name" required defaultValue={values.name} hint="The same name imported again updates the issues it made." />
      <ImportTarget projects={projects} values={values} askPrefix />
    </Form>
  );
}
