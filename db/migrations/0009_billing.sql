CREATE TABLE "billing_accounts" (
	"org_id" text PRIMARY KEY NOT NULL,
	"monthly_cap_micro_credits" bigint,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_charges" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"user_id" text,
	"key_id" text,
	"runtime" text,
	"tool" text NOT NULL,
	"tier" text NOT NULL,
	"micro_credits" bigint NOT NULL,
	"issue_id" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_credit_slices" (
	"org_id" text NOT NULL,
	"slice" integer NOT NULL,
	"given_remaining" bigint DEFAULT 0 NOT NULL,
	"bought_remaining" bigint DEFAULT 0 NOT NULL,
	"month_start" timestamp with time zone,
	"month_spent" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "billing_credit_slices_org_id_slice_pk" PRIMARY KEY("org_id","slice"),
	CONSTRAINT "billing_credit_slices_nonnegative" CHECK ("billing_credit_slices"."given_remaining" >= 0 and "billing_credit_slices"."bought_remaining" >= 0)
);
--> statement-breakpoint
CREATE TABLE "billing_credits" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"kind" text NOT NULL,
	"micro_credits" bigint NOT NULL,
	"source" text NOT NULL,
	"ref" text NOT NULL,
	"note" text,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "billing_accounts" ADD CONSTRAINT "billing_accounts_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_charges" ADD CONSTRAINT "billing_charges_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_credit_slices" ADD CONSTRAINT "billing_credit_slices_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_credits" ADD CONSTRAINT "billing_credits_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "billing_charges_org_idx" ON "billing_charges" USING btree ("org_id","created_at","id");--> statement-breakpoint
CREATE INDEX "billing_charges_user_idx" ON "billing_charges" USING btree ("org_id","user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "billing_credits_ref_uq" ON "billing_credits" USING btree ("org_id","source","ref");--> statement-breakpoint
CREATE UNIQUE INDEX "billing_credits_signup_uq" ON "billing_credits" USING btree ("ref") WHERE "billing_credits"."source" = 'signup';