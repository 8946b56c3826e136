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

/** `RTSC-1, rtsc-2 RTSC-3` → ["RTSC-1", "rtsc-2", "RTSC-3"] (the schema upper-cases them). */
export const identifierList = (value: string | undefined): string[] => (value ? value.split(/[\s,]+/).filter(Boolean) : []);

const labelList = (value: string | undefined): string[] => (value ? value.split(",").map((l) => l.trim()).filter(Boolean) : []);

const numberOrUndefined = (value: string | undefined) => (value === undefined ? undefined : Number(value));

/** The new-issue form → save_issue's create input. */
export function createIssueInput(form: FormData): Record<string, unknown> {
  const dependency = text(form, "dependency");
  const blockedBy = identifierList(text(form, "blockedBy"));
  const kind = text(form, "work");
  return {
    project: text(form, "project"),
    title: text(form, "title"),
    body: text(form, "body"),
    work: kind === undefined ? undefined : kind === "work",
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
  return input;
}

export function field(form: FormData, name: string): string | undefined {
  return text(form, name);
}
