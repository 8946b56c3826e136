CREATE TABLE "issue_term_backfills" (
	"org_id" text PRIMARY KEY NOT NULL,
	"after" text DEFAULT '' NOT NULL,
	"done_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "issue_terms" (
	"org_id" text NOT NULL,
	"issue_id" text NOT NULL,
	"term" bigint NOT NULL,
	"in_title" boolean NOT NULL,
	"open" boolean NOT NULL,
	CONSTRAINT "issue_terms_issue_id_term_pk" PRIMARY KEY("issue_id","term")
);
--> statement-breakpoint
ALTER TABLE "issue_term_backfills" ADD CONSTRAINT "issue_term_backfills_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "issue_terms" ADD CONSTRAINT "issue_terms_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "issue_terms" ADD CONSTRAINT "issue_terms_issue_id_issues_id_fk" FOREIGN KEY ("issue_id") REFERENCES "public"."issues"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "issue_terms_open_idx" ON "issue_terms" USING btree ("org_id","term","issue_id","in_title") WHERE "issue_terms"."open";--> statement-breakpoint
-- issue_terms.open follows the issue's status wherever it is written (a finish, a cancel, a
-- reopen by CI, an import), so the duplicate gate reads only open issues (decision 066). The
-- open statuses are constants/statuses.ts's openStatuses. Issues is the one hot table here: the
-- trigger and the foreign key above take brief locks on it (decision 069).
CREATE OR REPLACE FUNCTION retasc_issue_terms_open() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE issue_terms SET open = NEW.status IN ('todo', 'doing', 'blocked', 'review') WHERE issue_id = NEW.id;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER issues_terms_open AFTER UPDATE OF status ON issues FOR EACH ROW
  WHEN ((OLD.status IN ('todo', 'doing', 'blocked', 'review')) IS DISTINCT FROM (NEW.status IN ('todo', 'doing', 'blocked', 'review')))
  EXECUTE FUNCTION retasc_issue_terms_open();
