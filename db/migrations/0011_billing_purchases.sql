CREATE TABLE "billing_purchases" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"user_id" text,
	"pack_usd" integer NOT NULL,
	"micro_credits" bigint NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"checkout_session_id" text,
	"payment_intent_id" text,
	"receipt_url" text,
	"reversed_micro_credits" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"paid_at" timestamp with time zone,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_stripe_reversals" (
	"ref" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"payment_intent_id" text NOT NULL,
	"cents" integer NOT NULL,
	"received_at" timestamp with time zone NOT NULL,
	"applied_at" timestamp with time zone,
	"applied_micro_credits" bigint
);
--> statement-breakpoint
ALTER TABLE "billing_purchases" ADD CONSTRAINT "billing_purchases_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "billing_purchases_session_uq" ON "billing_purchases" USING btree ("checkout_session_id");--> statement-breakpoint
CREATE INDEX "billing_purchases_org_idx" ON "billing_purchases" USING btree ("org_id","created_at");--> statement-breakpoint
CREATE INDEX "billing_purchases_payment_intent_idx" ON "billing_purchases" USING btree ("payment_intent_id");--> statement-breakpoint
CREATE INDEX "billing_stripe_reversals_pi_idx" ON "billing_stripe_reversals" USING btree ("payment_intent_id");