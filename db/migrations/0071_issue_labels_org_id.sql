-- issue_labels carries its issue's org (issue 36, decision 099). Metadata only: a nullable column
-- and a NOT VALID check, which holds every row written from now on and none of the rows before
-- (issue_labels grows with every import, so its backfill is not this transaction's to do; the
-- check is validated, and the column made NOT NULL, after it). The trigger fills a row written
-- without the org (an instance of the previous version during a deploy) from its issue.
ALTER TABLE "issue_labels" ADD COLUMN "org_id" text;--> statement-breakpoint
CREATE OR REPLACE FUNCTION retasc_issue_labels_org() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.org_id IS NULL THEN
    SELECT i.org_id INTO NEW.org_id FROM issues i WHERE i.id = NEW.issue_id;
  END IF;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER issue_labels_org BEFORE INSERT ON "issue_labels" FOR EACH ROW EXECUTE FUNCTION retasc_issue_labels_org();--> statement-breakpoint
ALTER TABLE "issue_labels" ADD CONSTRAINT "issue_labels_org_id_present" CHECK ("issue_labels"."org_id" is not null) NOT VALID;
