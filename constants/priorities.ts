/** Priority numbers as agents send them: 0 none, 1 urgent, 2 high, 3 medium, 4 low (shared by the server and the Dash). */
export const PRIORITIES = [
  { value: 1, label: "urgent" },
  { value: 2, label: "high" },
  { value: 3, label: "medium" },
  { value: 4, label: "low" },
  { value: 0, label: "none" },
] as const;
export const priorityName = (priority: number) => PRIORITIES.find((p) => p.value === priority)?.label ?? String(priority);
