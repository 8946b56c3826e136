import type { issues } from "../../db/schema/index.ts";

/**
 * The issues domain's shapes, types only (as server/context.ts is for the context): what every
 * layer that reads an issue row imports, without importing the store that reads it.
 */

/** An issue as its row is stored (`issues`, db/schema/issues.ts). */
export type IssueRow = typeof issues.$inferSelect;
