-- Outsiders' text waits for a person (docs/decisions/038-outsiders-text-waits-for-a-person.md): intake_held keeps
-- an outsider's issue text and comments, encrypted, until a person releases them; intake_links
-- remembers what the person signed (its SHA-256, encrypted) and the source's last updated_at;
-- deliveries are deduplicated by what they carry (content_key) as well as by their id.
CREATE TABLE "intake_held" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"connector_id" text NOT NULL,
	"issue_id" text NOT NULL,
	"kind" text NOT NULL,
	"source_id" text NOT NULL,
	"text_enc" text NOT NULL,
	"reason" text DEFAULT 'filed' NOT NULL,
	"received_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "intake_comments" ALTER COLUMN "comment_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "intake_deliveries" ADD COLUMN "content_key" text;--> statement-breakpoint
ALTER TABLE "intake_links" ADD COLUMN "signed_digest_enc" text;--> statement-breakpoint
ALTER TABLE "intake_links" ADD COLUMN "source_updated_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "intake_held" ADD CONSTRAINT "intake_held_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intake_held" ADD CONSTRAINT "intake_held_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intake_held" ADD CONSTRAINT "intake_held_issue_id_issues_id_fk" FOREIGN KEY ("issue_id") REFERENCES "public"."issues"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "intake_held_source_uq" ON "intake_held" USING btree ("connector_id","kind","source_id");--> statement-breakpoint
CREATE INDEX "intake_held_issue_idx" ON "intake_held" USING btree ("issue_id");--> statement-breakpoint
CREATE INDEX "intake_held_org_idx" ON "intake_held" USING btree ("org_id","received_at");--> statement-breakpoint
CREATE UNIQUE INDEX "intake_deliveries_content_uq" ON "intake_deliveries" USING btree ("connector_id","content_key");