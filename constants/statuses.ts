/**
 * Issue statuses, once for the whole tree: the Drizzle schema's column enum, the server's
 * schemas and the Dash's client components all read them here. This module imports nothing,
 * so the browser bundle can take it without pulling in server code.
 */
export const issueStatuses = ["todo", "doing", "blocked", "review", "done", "canceled"] as const;
export type IssueStatus = (typeof issueStatuses)[number];

/** Statuses still in play (`done` and `canceled` are terminal): the default filter of issue lists. */
export const openStatuses = ["todo", "doing", "blocked", "review"] as const satisfies readonly IssueStatus[];
