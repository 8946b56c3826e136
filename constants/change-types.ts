/**
 * What kind of change an issue is, from Conventional Commits: create's `changeType` (required of
 * agents, decision 059), the Dash's select and usage's split. Imports nothing, for the browser bundle.
 */
export const changeTypes = ["feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci", "chore", "revert"] as const;
export type ChangeType = (typeof changeTypes)[number];
