CREATE TABLE "import_staged_files" (
	"run_id" text NOT NULL,
	"source_id" text NOT NULL,
	"org_id" text NOT NULL,
	"content_type" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"content_enc" "bytea" NOT NULL,
	CONSTRAINT "import_staged_files_run_id_source_id_pk" PRIMARY KEY("run_id","source_id")
);
--> statement-breakpoint
ALTER TABLE "import_staged_files" ADD CONSTRAINT "import_staged_files_run_id_linear_import_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."linear_import_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_staged_files" ADD CONSTRAINT "import_staged_files_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;