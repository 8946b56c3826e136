CREATE INDEX CONCURRENTLY "issues_children_idx" ON "issues" USING btree ("parent_id") WHERE "issues"."parent_id" is not null;--> statement-breakpoint
DROP INDEX CONCURRENTLY "issues_parent_idx";
