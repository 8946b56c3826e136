CREATE TABLE "job_receipts" (
	"key" text PRIMARY KEY NOT NULL,
	"job" text NOT NULL,
	"runs" integer DEFAULT 1 NOT NULL,
	"result" jsonb,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "available_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "locked_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "completed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "failed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "outbox" ADD COLUMN "last_error" text;--> statement-breakpoint
CREATE INDEX "job_receipts_job_idx" ON "job_receipts" USING btree ("job","created_at");--> statement-breakpoint
CREATE INDEX "job_receipts_error_idx" ON "job_receipts" USING btree ("created_at") WHERE "job_receipts"."error" is not null;--> statement-breakpoint
CREATE INDEX "outbox_open_idx" ON "outbox" USING btree ("id") WHERE "outbox"."completed_at" is null and "outbox"."failed_at" is null;--> statement-breakpoint
CREATE INDEX "outbox_failed_idx" ON "outbox" USING btree ("failed_at") WHERE "outbox"."failed_at" is not null;