ALTER TABLE "linear_import_runs" ADD COLUMN "source" text DEFAULT 'linear' NOT NULL;--> statement-breakpoint
ALTER TABLE "linear_import_runs" ADD COLUMN "wait_until" timestamp with time zone;