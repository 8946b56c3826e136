-- intake_comments carries its connector's org (issue 36, decision 099). The table is small in
-- practice (one row per outside comment a connector took in, on the few issues linked to a
-- tracker), so it is filled here, in the migration's transaction, and made NOT NULL at once. The
-- trigger fills a row written without the org (an instance of the previous version during a
-- deploy) from its connector.
ALTER TABLE "intake_comments" ADD COLUMN "org_id" text;--> statement-breakpoint
CREATE OR REPLACE FUNCTION retasc_intake_comments_org() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.org_id IS NULL THEN
    SELECT c.org_id INTO NEW.org_id FROM connectors c WHERE c.id = NEW.connector_id;
  END IF;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER intake_comments_org BEFORE INSERT ON "intake_comments" FOR EACH ROW EXECUTE FUNCTION retasc_intake_comments_org();--> statement-breakpoint
UPDATE "intake_comments" ic SET "org_id" = c.org_id FROM connectors c WHERE c.id = ic.connector_id AND ic.org_id IS NULL;--> statement-breakpoint
ALTER TABLE "intake_comments" ALTER COLUMN "org_id" SET NOT NULL;
