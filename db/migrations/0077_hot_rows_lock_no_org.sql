-- Decision 109. A claim inserts a lease and a finish or a first heartbeat an activity row; the
-- foreign key of each to orgs took a key-share lock on the org's row in every such transaction
-- (a Heap LOCK record, 54 B; a MultiXact once two transactions of one org overlap). Both tables
-- keep org_id, not null; the org's purge empties them by org_id, and a lease goes with its issue.
ALTER TABLE "leases" DROP CONSTRAINT "leases_org_id_orgs_id_fk";
--> statement-breakpoint
ALTER TABLE "activity" DROP CONSTRAINT "activity_org_id_orgs_id_fk";
