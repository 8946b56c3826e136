-- Decision 112: the keys the previous migration added NOT VALID are validated: a scan of each
-- table that takes no lock a write waits for (SHARE UPDATE EXCLUSIVE on the child, ROW SHARE on
-- the parent). A row whose org differs from its parent's would fail it here.
ALTER TABLE "intake_comments" VALIDATE CONSTRAINT "intake_comments_org_connector_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_comments" VALIDATE CONSTRAINT "intake_comments_org_comment_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_deliveries" VALIDATE CONSTRAINT "intake_deliveries_org_connector_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_held" VALIDATE CONSTRAINT "intake_held_org_connector_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_links" VALIDATE CONSTRAINT "intake_links_org_connector_id_fk";
--> statement-breakpoint
ALTER TABLE "attachment_files" VALIDATE CONSTRAINT "attachment_files_org_attachment_id_fk";
--> statement-breakpoint
ALTER TABLE "import_staged_files" VALIDATE CONSTRAINT "import_staged_files_org_run_id_fk";
--> statement-breakpoint
ALTER TABLE "linear_import_pages" VALIDATE CONSTRAINT "linear_import_pages_org_run_id_fk";
--> statement-breakpoint
ALTER TABLE "agent_keys" VALIDATE CONSTRAINT "agent_keys_org_project_id_fk";
--> statement-breakpoint
ALTER TABLE "key_riders" VALIDATE CONSTRAINT "key_riders_org_key_id_fk";
--> statement-breakpoint
ALTER TABLE "project_prefix_aliases" VALIDATE CONSTRAINT "project_prefix_aliases_org_project_id_fk";
--> statement-breakpoint
ALTER TABLE "setup_codes" VALIDATE CONSTRAINT "setup_codes_org_project_id_fk";
--> statement-breakpoint
ALTER TABLE "setup_codes" VALIDATE CONSTRAINT "setup_codes_org_key_id_fk";
--> statement-breakpoint
ALTER TABLE "connectors" VALIDATE CONSTRAINT "connectors_org_project_id_fk";
--> statement-breakpoint
ALTER TABLE "fleet_hours" VALIDATE CONSTRAINT "fleet_hours_org_project_id_fk";
--> statement-breakpoint
ALTER TABLE "linear_import_runs" VALIDATE CONSTRAINT "linear_import_runs_org_project_id_fk";
--> statement-breakpoint
ALTER TABLE "issues" VALIDATE CONSTRAINT "issues_org_project_id_fk";
--> statement-breakpoint
ALTER TABLE "relations" VALIDATE CONSTRAINT "relations_org_source_id_fk";
--> statement-breakpoint
ALTER TABLE "relations" VALIDATE CONSTRAINT "relations_org_target_id_fk";
--> statement-breakpoint
ALTER TABLE "verification_reports" VALIDATE CONSTRAINT "verification_reports_org_issue_id_fk";
--> statement-breakpoint
ALTER TABLE "checkpoints" VALIDATE CONSTRAINT "checkpoints_org_issue_id_fk";
--> statement-breakpoint
ALTER TABLE "leases" VALIDATE CONSTRAINT "leases_org_issue_id_fk";
--> statement-breakpoint
ALTER TABLE "attachments" VALIDATE CONSTRAINT "attachments_org_issue_id_fk";
--> statement-breakpoint
ALTER TABLE "comments" VALIDATE CONSTRAINT "comments_org_issue_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_held" VALIDATE CONSTRAINT "intake_held_org_issue_id_fk";
--> statement-breakpoint
ALTER TABLE "intake_links" VALIDATE CONSTRAINT "intake_links_org_issue_id_fk";
--> statement-breakpoint
ALTER TABLE "issue_terms" VALIDATE CONSTRAINT "issue_terms_org_issue_id_fk";