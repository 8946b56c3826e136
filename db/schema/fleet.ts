import { foreignKey, integer, jsonb, pgTable, text, timestamp, unique } from "drizzle-orm/pg-core";
import { orgIdColumn, projects } from "./orgs.ts";

/**
 * The Fleet page's hourly facts that the activity log does not hold (decision 027): the queue's
 * depth by status, sampled by the `sweep.fleet-sample` sweep (the last sample of the hour wins),
 * and the fenced writes refused as stale (STALE_CLAIM, counted by the refused write's transaction whatever the door; a refused write
 * rolls back, so it leaves no activity row). One row per project and clock hour, so a member
 * scoped to some projects (decision 042) is shown theirs; kept eight days.
 */
export const fleetHours = pgTable(
  "fleet_hours",
  {
    orgId: orgIdColumn(),
    /** Null: org-wide (samples taken before they were per project, a refusal naming no issue); only unscoped viewers count it. */
    projectId: text("project_id"),
    hour: timestamp("hour", { withTimezone: true }).notNull(),
    staleRefused: integer("stale_refused").notNull().default(0),
    /** Open issues at the hour's last sample: ready, blocked, doing, review. Null: not sampled that hour. */
    depth: jsonb("depth").$type<Record<string, number>>(),
  },
  (t) => [
    unique("fleet_hours_org_hour_project_uq").on(t.orgId, t.hour, t.projectId).nullsNotDistinct(),
    foreignKey({ name: "fleet_hours_org_project_id_fk", columns: [t.orgId, t.projectId], foreignColumns: [projects.orgId, projects.id] }).onDelete("cascade"),
  ],
);
