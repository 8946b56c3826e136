-- Decision 104: two indexes of issues fewer entries per claim and finish, each of which is a
-- non-HOT update (the status changes) that adds an entry to every index whose predicate holds.
-- issues_org_status_idx (every issue) becomes issues_org_blocked_canceled_idx (the rare statuses
-- the lists filter on); issues_dispatch_idx, read by a project key's next_batch alone, goes (it
-- reads issues_org_dispatch_idx, the same order led by the org). Built before the drops.
CREATE INDEX CONCURRENTLY "issues_org_blocked_canceled_idx" ON "issues" USING btree ("org_id","status") WHERE "issues"."status" in ('blocked', 'canceled');--> statement-breakpoint
DROP INDEX CONCURRENTLY "issues_org_status_idx";--> statement-breakpoint
DROP INDEX CONCURRENTLY "issues_dispatch_idx";
