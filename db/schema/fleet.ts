import { integer, jsonb, pgTable, primaryKey, timestamp } from "drizzle-orm/pg-core";
import { orgIdColumn } from "./orgs.ts";

/**
 * The Fleet page's hourly facts that the activity log does not hold (decision 027): the queue's
 * depth by status, sampled by the `sweep.fleet-sample` sweep (the last sample of the hour wins),
 * and the fenced writes refused as stale (STALE_CLAIM, counted at the MCP door; a refused write
 * rolls back, so it leaves no activity row). One row per org and clock hour; kept eight days.
 */
export const fleetHours = pgTable(
  "fleet_hours",
  {
    orgId: orgIdColumn(),
    hour: timestamp("hour", { withTimezone: true }).notNull(),
    staleRefused: integer("stale_refused").notNull().default(0),
    /** Open issues at the hour's last sample: ready, blocked, doing, review. Null: not sampled that hour. */
    depth: jsonb("depth").$type<Record<string, number>>(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.hour] })],
);
