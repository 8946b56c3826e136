CREATE TABLE "attachment_files" (
	"attachment_id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"content_type" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"content_enc" "bytea" NOT NULL
);
--> statement-breakpoint
ALTER TABLE "attachment_files" ADD CONSTRAINT "attachment_files_attachment_id_attachments_id_fk" FOREIGN KEY ("attachment_id") REFERENCES "public"."attachments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachment_files" ADD CONSTRAINT "attachment_files_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;