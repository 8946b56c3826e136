-- billing_stripe_reversals gets the org of the payment it reverses (decision 110), so a move publishes
-- it by org_id like every org-owned table. Backfilled from the purchase of the same payment intent;
-- a reversal no purchase names (Stripe sent it before the session's completion, which never came)
-- has no org here and is dropped; were that completion still to come, its credit would stand
-- unreversed (decision 110 says how to look for such rows before migrating).
ALTER TABLE "billing_stripe_reversals" ADD COLUMN "org_id" text;--> statement-breakpoint
UPDATE "billing_stripe_reversals" r SET "org_id" = p."org_id"
  FROM (SELECT DISTINCT ON ("payment_intent_id") "payment_intent_id", "org_id" FROM "billing_purchases"
         WHERE "payment_intent_id" IS NOT NULL ORDER BY "payment_intent_id", "created_at") p
 WHERE p."payment_intent_id" = r."payment_intent_id";--> statement-breakpoint
DELETE FROM "billing_stripe_reversals" WHERE "org_id" IS NULL;--> statement-breakpoint
ALTER TABLE "billing_stripe_reversals" ALTER COLUMN "org_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "billing_stripe_reversals" ADD CONSTRAINT "billing_stripe_reversals_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;
