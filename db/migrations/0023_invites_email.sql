ALTER TABLE "invites" ADD COLUMN "email" text;--> statement-breakpoint
ALTER TABLE "invites" ADD COLUMN "emailed_at" timestamp with time zone;