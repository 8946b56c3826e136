-- Decision 112: each foreign key between two org tables becomes (org_id, x) references t (org_id, id),
-- added NOT VALID (it holds every row written from now on; no scan under this transaction's locks)
-- and the key on the id alone dropped. ON DELETE SET NULL names its column alone, so a deleted
-- project or key nulls project_id or key_id and never the row's org_id. The next migration validates.
-- The keys of the tables a claim or a finish locks (issues, leases) come last: their locks are held
-- for the shortest time, under decision 069's lock_timeout and retries like every migration's.
ALTER TABLE "intake_comments" ADD CONSTRAINT "intake_comments_org_connector_id_fk" FOREIGN KEY ("org_id","connector_id") REFERENCES "connectors"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "intake_comments" DROP CONSTRAINT "intake_comments_connector_id_connectors_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_comments" ADD CONSTRAINT "intake_comments_org_comment_id_fk" FOREIGN KEY ("org_id","comment_id") REFERENCES "comments"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "intake_comments" DROP CONSTRAINT "intake_comments_comment_id_comments_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_deliveries" ADD CONSTRAINT "intake_deliveries_org_connector_id_fk" FOREIGN KEY ("org_id","connector_id") REFERENCES "connectors"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "intake_deliveries" DROP CONSTRAINT "intake_deliveries_connector_id_connectors_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_held" ADD CONSTRAINT "intake_held_org_connector_id_fk" FOREIGN KEY ("org_id","connector_id") REFERENCES "connectors"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "intake_held" DROP CONSTRAINT "intake_held_connector_id_connectors_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_links" ADD CONSTRAINT "intake_links_org_connector_id_fk" FOREIGN KEY ("org_id","connector_id") REFERENCES "connectors"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "intake_links" DROP CONSTRAINT "intake_links_connector_id_connectors_id_fk";
--> statement-breakpoint
ALTER TABLE "attachment_files" ADD CONSTRAINT "attachment_files_org_attachment_id_fk" FOREIGN KEY ("org_id","attachment_id") REFERENCES "attachments"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "attachment_files" DROP CONSTRAINT "attachment_files_attachment_id_attachments_id_fk";
--> statement-breakpoint
ALTER TABLE "import_staged_files" ADD CONSTRAINT "import_staged_files_org_run_id_fk" FOREIGN KEY ("org_id","run_id") REFERENCES "linear_import_runs"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "import_staged_files" DROP CONSTRAINT "import_staged_files_run_id_linear_import_runs_id_fk";
--> statement-breakpoint
ALTER TABLE "linear_import_pages" ADD CONSTRAINT "linear_import_pages_org_run_id_fk" FOREIGN KEY ("org_id","run_id") REFERENCES "linear_import_runs"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "linear_import_pages" DROP CONSTRAINT "linear_import_pages_run_id_linear_import_runs_id_fk";
--> statement-breakpoint
ALTER TABLE "agent_keys" ADD CONSTRAINT "agent_keys_org_project_id_fk" FOREIGN KEY ("org_id","project_id") REFERENCES "projects"("org_id","id") ON DELETE SET NULL ("project_id") NOT VALID;
--> statement-breakpoint
ALTER TABLE "agent_keys" DROP CONSTRAINT "agent_keys_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "key_riders" ADD CONSTRAINT "key_riders_org_key_id_fk" FOREIGN KEY ("org_id","key_id") REFERENCES "agent_keys"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "key_riders" DROP CONSTRAINT "key_riders_key_id_agent_keys_id_fk";
--> statement-breakpoint
ALTER TABLE "project_prefix_aliases" ADD CONSTRAINT "project_prefix_aliases_org_project_id_fk" FOREIGN KEY ("org_id","project_id") REFERENCES "projects"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "project_prefix_aliases" DROP CONSTRAINT "project_prefix_aliases_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "setup_codes" ADD CONSTRAINT "setup_codes_org_project_id_fk" FOREIGN KEY ("org_id","project_id") REFERENCES "projects"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "setup_codes" DROP CONSTRAINT "setup_codes_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "setup_codes" ADD CONSTRAINT "setup_codes_org_key_id_fk" FOREIGN KEY ("org_id","key_id") REFERENCES "agent_keys"("org_id","id") ON DELETE SET NULL ("key_id") NOT VALID;
--> statement-breakpoint
ALTER TABLE "setup_codes" DROP CONSTRAINT "setup_codes_key_id_agent_keys_id_fk";
--> statement-breakpoint
ALTER TABLE "connectors" ADD CONSTRAINT "connectors_org_project_id_fk" FOREIGN KEY ("org_id","project_id") REFERENCES "projects"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "connectors" DROP CONSTRAINT "connectors_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "fleet_hours" ADD CONSTRAINT "fleet_hours_org_project_id_fk" FOREIGN KEY ("org_id","project_id") REFERENCES "projects"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "fleet_hours" DROP CONSTRAINT "fleet_hours_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "linear_import_runs" ADD CONSTRAINT "linear_import_runs_org_project_id_fk" FOREIGN KEY ("org_id","project_id") REFERENCES "projects"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "linear_import_runs" DROP CONSTRAINT "linear_import_runs_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "issues" ADD CONSTRAINT "issues_org_project_id_fk" FOREIGN KEY ("org_id","project_id") REFERENCES "projects"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "issues" DROP CONSTRAINT "issues_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "relations" ADD CONSTRAINT "relations_org_source_id_fk" FOREIGN KEY ("org_id","source_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "relations" DROP CONSTRAINT "relations_source_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "relations" ADD CONSTRAINT "relations_org_target_id_fk" FOREIGN KEY ("org_id","target_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "relations" DROP CONSTRAINT "relations_target_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "verification_reports" ADD CONSTRAINT "verification_reports_org_issue_id_fk" FOREIGN KEY ("org_id","issue_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "verification_reports" DROP CONSTRAINT "verification_reports_issue_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "checkpoints" ADD CONSTRAINT "checkpoints_org_issue_id_fk" FOREIGN KEY ("org_id","issue_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "checkpoints" DROP CONSTRAINT "checkpoints_issue_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "leases" ADD CONSTRAINT "leases_org_issue_id_fk" FOREIGN KEY ("org_id","issue_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "leases" DROP CONSTRAINT "leases_issue_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_org_issue_id_fk" FOREIGN KEY ("org_id","issue_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "attachments" DROP CONSTRAINT "attachments_issue_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "comments" ADD CONSTRAINT "comments_org_issue_id_fk" FOREIGN KEY ("org_id","issue_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "comments" DROP CONSTRAINT "comments_issue_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_held" ADD CONSTRAINT "intake_held_org_issue_id_fk" FOREIGN KEY ("org_id","issue_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "intake_held" DROP CONSTRAINT "intake_held_issue_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_links" ADD CONSTRAINT "intake_links_org_issue_id_fk" FOREIGN KEY ("org_id","issue_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "intake_links" DROP CONSTRAINT "intake_links_issue_id_issues_id_fk";
--> statement-breakpoint
ALTER TABLE "issue_terms" ADD CONSTRAINT "issue_terms_org_issue_id_fk" FOREIGN KEY ("org_id","issue_id") REFERENCES "issues"("org_id","id") ON DELETE CASCADE NOT VALID;
--> statement-breakpoint
ALTER TABLE "issue_terms" DROP CONSTRAINT "issue_terms_issue_id_issues_id_fk";