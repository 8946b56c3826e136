ALTER TABLE "connectors" ADD COLUMN "pull_requests" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "reviewer_id" text;--> statement-breakpoint
ALTER TABLE "intake_links" ADD COLUMN "kind" text DEFAULT 'issue' NOT NULL;--> statement-breakpoint
ALTER TABLE "connectors" ADD CONSTRAINT "connectors_reviewer_id_user_id_fk" FOREIGN KEY ("reviewer_id") REFERENCES "public"."user"("id") ON DELETE set null ON UPDATE no action;