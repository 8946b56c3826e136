-- A synced issue that becomes done or canceled closes its source (server/intake/write-back.ts).
-- A trigger, so every path that finishes an issue enqueues it in the same transaction: save_issue
-- and the dispatch functions' plain finish (retasc_finish) alike. Intake itself marks the link's
-- source closed before it cancels an issue the source closed, so nothing is written back then.
CREATE OR REPLACE FUNCTION retasc_intake_write_back() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM intake_links l WHERE l.issue_id = NEW.id AND l.source_open) THEN
    INSERT INTO outbox (job, payload, org_id)
    VALUES ('intake.write_back', jsonb_build_object('orgId', NEW.org_id, 'issueId', NEW.id), NEW.org_id);
    PERFORM pg_notify('retasc_outbox', '');
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER issues_intake_write_back AFTER UPDATE OF status ON issues FOR EACH ROW
  WHEN (NEW.status IN ('done', 'canceled') AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION retasc_intake_write_back();
