-- A credential an owner asked to keep to import the same team or project again (decision 094), sealed under the org's key.
CREATE TABLE "import_credentials" (
	"org_id" text NOT NULL,
	"source" text NOT NULL,
	"source_id" text NOT NULL,
	"credential_enc" text NOT NULL,
	"mapping" text,
	"kept_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"used_at" timestamp with time zone,
	CONSTRAINT "import_credentials_org_id_source_source_id_pk" PRIMARY KEY("org_id","source","source_id")
);
--> statement-breakpoint
ALTER TABLE "import_credentials" ADD CONSTRAINT "import_credentials_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "import_credentials" ADD CONSTRAINT "import_credentials_kept_by_user_id_fk" FOREIGN KEY ("kept_by") REFERENCES "public"."user"("id") ON DELETE set null ON UPDATE no action;