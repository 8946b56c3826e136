-- Decision 112: every foreign key between two org tables names org_id on both sides, so each
-- referenced table needs a unique key (org_id, id). Built concurrently, each in its own statement
-- outside a transaction (decision 069's migrator), before the next migration's keys use them.
CREATE UNIQUE INDEX CONCURRENTLY "projects_org_id_uq" ON "projects" USING btree ("org_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY "issues_org_id_uq" ON "issues" USING btree ("org_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY "comments_org_id_uq" ON "comments" USING btree ("org_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY "attachments_org_id_uq" ON "attachments" USING btree ("org_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY "connectors_org_id_uq" ON "connectors" USING btree ("org_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY "agent_keys_org_id_uq" ON "agent_keys" USING btree ("org_id","id");
--> statement-breakpoint
CREATE UNIQUE INDEX CONCURRENTLY "linear_import_runs_org_id_uq" ON "linear_import_runs" USING btree ("org_id","id");