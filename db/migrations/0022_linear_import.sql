CREATE TABLE "import_ghosts" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"source" text NOT NULL,
	"source_user_id" text NOT NULL,
	"user_id" text NOT NULL,
	"email_enc" text,
	"email_hash" text,
	"claimed_by" text,
	"claimed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "linear_import_pages" (
	"run_id" text NOT NULL,
	"seq" integer NOT NULL,
	"org_id" text NOT NULL,
	"payload_enc" text NOT NULL,
	CONSTRAINT "linear_import_pages_run_id_seq_pk" PRIMARY KEY("run_id","seq")
);
--> statement-breakpoint
CREATE TABLE "linear_import_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"project_id" text NOT NULL,
	"team_id" text NOT NULL,
	"team_key" text NOT NULL,
	"started_by" text,
	"phase" text DEFAULT 'fetching' NOT NULL,
	"done" integer DEFAULT 0 NOT NULL,
	"total" integer DEFAULT 0 NOT NULL,
	"pages_fetched" integer DEFAULT 0 NOT NULL,
	"pages_applied" integer DEFAULT 0 NOT NULL,
	"fetch_heartbeat_at" timestamp with time zone,
	"counts" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "linear_links" (
	"org_id" text NOT NULL,
	"linear_id" text NOT NULL,
	"kind" text NOT NULL,
	"retasc_id" text NOT NULL,
	"hash" text NOT NULL,
	"estimate" real,
	CONSTRAINT "linear_links_org_id_linear_id_pk" PRIMARY KEY("org_id","linear_id")
);
--> statement-breakpoint
ALTER TABLE "import_ghosts" ADD CONSTRAINT "import_ghosts_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_ghosts" ADD CONSTRAINT "import_ghosts_user_id_user_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."user"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_ghosts" ADD CONSTRAINT "import_ghosts_claimed_by_user_id_fk" FOREIGN KEY ("claimed_by") REFERENCES "public"."user"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "linear_import_pages" ADD CONSTRAINT "linear_import_pages_run_id_linear_import_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."linear_import_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "linear_import_pages" ADD CONSTRAINT "linear_import_pages_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "linear_import_runs" ADD CONSTRAINT "linear_import_runs_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "linear_import_runs" ADD CONSTRAINT "linear_import_runs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "linear_links" ADD CONSTRAINT "linear_links_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "import_ghosts_source_uq" ON "import_ghosts" USING btree ("org_id","source","source_user_id");--> statement-breakpoint
CREATE INDEX "import_ghosts_email_idx" ON "import_ghosts" USING btree ("email_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "linear_import_runs_one_live_uq" ON "linear_import_runs" USING btree ("org_id") WHERE "linear_import_runs"."phase" in ('fetching', 'applying', 'linking');--> statement-breakpoint
CREATE INDEX "linear_import_runs_org_idx" ON "linear_import_runs" USING btree ("org_id","created_at");--> statement-breakpoint
CREATE INDEX "linear_links_retasc_idx" ON "linear_links" USING btree ("retasc_id");