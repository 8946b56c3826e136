import { invalidInput } from "../errors.ts";

/**
 * Turns the Dash's HTML forms into the inputs the server functions take (the same ones
 * agents send), so every rule and message stays in server/. Blank fields mean "not given".
 */
const text = (form: FormData, name: string): string | undefined => {
  const value = form.get(name);
  if (typeof value !== "string") return undefined;
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
};

/** One reference as people type it: `WEB-4`, `web-4`, `WEB 4`, or `#4` / `4` for the form's project. */
const REFERENCE = /([A-Za-z][A-Za-z0-9]{1,9})[\s-]*(\d+)|#?(\d+)/g;

/**
 * `WEB-1, web 2 #3` → ["WEB-1", "WEB-2", "WEB-3"] with `WEB` the form's project. Anything else
 * is refused in the form's own words, naming what was not understood.
 */
export function issueReferences(value: string | undefined, prefix: string | undefined, field: string): string[] {
  if (!value) return [];
  const found: string[] = [];
  const rest = value
    .replace(REFERENCE, (_all, word: string | undefined, number: string | undefined, bare: string | undefined) => {
      if (word !== undefined) found.push(`${word.toUpperCase()}-${number}`);
      else if (prefix) found.push(`${prefix.toUpperCase()}-${bare}`);
      else return `#${bare}`;
      return " ";
    })
    .split(/[\s,;]+/)
    .filter(Boolean);
  if (rest.length > 0) {
    const example = prefix ? prefix.toUpperCase() : "WEB";
    throw invalidInput(
      `${field}: ${rest.map((r) => `"${r}"`).join(", ")} is not an issue`,
      `Write issues as ${example}-4, ${example.toLowerCase()}-4, ${example} 4 or #4, separated by commas or spaces.`,
    );
  }
  return found;
}

const labelList = (value: string | undefined): string[] => (value ? value.split(",").map((l) => l.trim()).filter(Boolean) : []);

const numberOrUndefined = (value: string | undefined) => (value === undefined ? undefined : Number(value));

/** The new-issue form → save_issue's create input. */
export function createIssueInput(form: FormData): Record<string, unknown> {
  const dependency = text(form, "dependency");
  const blockedBy = issueReferences(text(form, "blockedBy"), text(form, "project"), "Blocked by");
  const kind = text(form, "work");
  return {
    project: text(form, "project"),
    title: text(form, "title"),
    body: text(form, "body"),
    work: kind === undefined ? undefined : kind === "work",
    changeType: text(form, "changeType"),
    // Only the declaration the person chose is sent; the server requires exactly one.
    blockedBy: dependency === "blockedBy" ? blockedBy : undefined,
    noDependency: dependency === "none" ? text(form, "noDependency") : undefined,
    priority: numberOrUndefined(text(form, "priority")),
    assignee: text(form, "assignee"),
    dueAt: text(form, "dueAt"),
    labels: labelList(text(form, "labels")),
    parent: text(form, "parent"),
    status: form.get("startBlocked") === "on" ? "blocked" : undefined,
  };
}

/**
 * The drill-down's edit form → save_issue's update input. The form carries each field's
 * value as loaded (`was.<name>`), and only fields the person changed are sent, so the
 * activity log names real changes. A blank due date or assignee clears it.
 */
export function editIssueInput(identifier: string, form: FormData): Record<string, unknown> {
  const changed = (name: string) => (form.get(name) ?? "") !== (form.get(`was.${name}`) ?? "");
  const input: Record<string, unknown> = { identifier };
  if (changed("title")) input.title = text(form, "title") ?? "";
  if (changed("body")) input.body = String(form.get("body") ?? "");
  if (changed("status")) input.status = text(form, "status");
  if (changed("assignee")) input.assignee = text(form, "assignee") ?? null;
  if (changed("dueAt")) input.dueAt = text(form, "dueAt") ?? null;
  if (changed("labels")) input.labels = labelList(text(form, "labels"));
  // Correctable, not removable: "not said" is only offered while the issue has none.
  if (changed("changeType") && text(form, "changeType")) input.changeType = text(form, "changeType");
  return input;
}

export function field(form: FormData, name: string): string | undefined {
  return text(form, name);
}
