CREATE TABLE "intake_comments" (
	"connector_id" text NOT NULL,
	"source_id" text NOT NULL,
	"comment_id" text NOT NULL,
	CONSTRAINT "intake_comments_connector_id_source_id_pk" PRIMARY KEY("connector_id","source_id")
);
--> statement-breakpoint
CREATE TABLE "intake_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"connector_id" text NOT NULL,
	"delivery_id" text NOT NULL,
	"event" text NOT NULL,
	"payload_enc" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"processed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "intake_links" (
	"connector_id" text NOT NULL,
	"source_id" text NOT NULL,
	"source_number" integer NOT NULL,
	"org_id" text NOT NULL,
	"issue_id" text NOT NULL,
	"source_open" boolean DEFAULT true NOT NULL,
	CONSTRAINT "intake_links_connector_id_source_id_pk" PRIMARY KEY("connector_id","source_id")
);
--> statement-breakpoint
CREATE TABLE "notify_bindings" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"user_id" text NOT NULL,
	"channel" text NOT NULL,
	"address_enc" text NOT NULL,
	"status" text NOT NULL,
	"broken_reason" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notify_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"user_id" text NOT NULL,
	"channel" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notify_deliveries" (
	"key" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"user_id" text NOT NULL,
	"issue_id" text NOT NULL,
	"kind" text NOT NULL,
	"channel" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"provider_id" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"sent_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "notify_mutes" (
	"org_id" text NOT NULL,
	"user_id" text NOT NULL,
	"kind" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "notify_mutes_org_id_user_id_kind_pk" PRIMARY KEY("org_id","user_id","kind")
);
--> statement-breakpoint
CREATE TABLE "notify_slack_installs" (
	"org_id" text PRIMARY KEY NOT NULL,
	"team_id" text NOT NULL,
	"bot_token_enc" text NOT NULL,
	"installed_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "triage_all" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "connected_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "last_delivery_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "last_error" text;--> statement-breakpoint
ALTER TABLE "connectors" ADD COLUMN "last_error_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "intake_comments" ADD CONSTRAINT "intake_comments_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intake_comments" ADD CONSTRAINT "intake_comments_comment_id_comments_id_fk" FOREIGN KEY ("comment_id") REFERENCES "public"."comments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intake_deliveries" ADD CONSTRAINT "intake_deliveries_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intake_deliveries" ADD CONSTRAINT "intake_deliveries_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intake_links" ADD CONSTRAINT "intake_links_connector_id_connectors_id_fk" FOREIGN KEY ("connector_id") REFERENCES "public"."connectors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intake_links" ADD CONSTRAINT "intake_links_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "intake_links" ADD CONSTRAINT "intake_links_issue_id_issues_id_fk" FOREIGN KEY ("issue_id") REFERENCES "public"."issues"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_bindings" ADD CONSTRAINT "notify_bindings_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_bindings" ADD CONSTRAINT "notify_bindings_user_id_user_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."user"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_codes" ADD CONSTRAINT "notify_codes_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_codes" ADD CONSTRAINT "notify_codes_user_id_user_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."user"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_deliveries" ADD CONSTRAINT "notify_deliveries_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_mutes" ADD CONSTRAINT "notify_mutes_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_mutes" ADD CONSTRAINT "notify_mutes_user_id_user_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."user"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notify_slack_installs" ADD CONSTRAINT "notify_slack_installs_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "intake_deliveries_delivery_uq" ON "intake_deliveries" USING btree ("connector_id","delivery_id");--> statement-breakpoint
CREATE UNIQUE INDEX "intake_links_issue_uq" ON "intake_links" USING btree ("issue_id");--> statement-breakpoint
CREATE UNIQUE INDEX "notify_bindings_person_channel_uq" ON "notify_bindings" USING btree ("org_id","user_id","channel");--> statement-breakpoint
CREATE INDEX "notify_codes_person_idx" ON "notify_codes" USING btree ("org_id","user_id","channel");--> statement-breakpoint
CREATE INDEX "notify_deliveries_person_idx" ON "notify_deliveries" USING btree ("org_id","user_id","created_at");