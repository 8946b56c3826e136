CREATE TABLE "fleet_hours" (
	"org_id" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"stale_refused" integer DEFAULT 0 NOT NULL,
	"depth" jsonb,
	CONSTRAINT "fleet_hours_org_id_hour_pk" PRIMARY KEY("org_id","hour")
);
--> statement-breakpoint
ALTER TABLE "fleet_hours" ADD CONSTRAINT "fleet_hours_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "activity_org_reclaimed_idx" ON "activity" USING btree ("org_id","created_at") WHERE "activity"."kind" = 'reclaimed';