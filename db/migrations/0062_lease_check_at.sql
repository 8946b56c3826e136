-- The lease as the dispatch indexes read it (decision 097). A renewal (heartbeat, checkpoint, a
-- session's calls) moves lease_expires_at; while any index of issues names that column no renewal
-- can be a HOT update, and each wrote an entry into every index of issues. lease_check_at takes its
-- place in the indexes: null exactly when lease_expires_at is, never after it, and moved by a
-- renewal only once it is within half a lease of now (then to the new expiry), so most renewals
-- change no indexed column. A pick reads lapsed leases as lease_check_at <= now and then the exact
-- expiry. The trigger keeps it on every write of a lease, so no writer (nor an instance of the
-- previous version during a deploy) sets it.
ALTER TABLE "issues" ADD COLUMN "lease_check_at" timestamp with time zone;--> statement-breakpoint
CREATE FUNCTION retasc_lease_check_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.lease_expires_at IS NULL THEN
    NEW.lease_check_at := NULL;
  ELSIF TG_OP = 'INSERT' OR OLD.lease_check_at IS NULL OR NEW.lease_id IS DISTINCT FROM OLD.lease_id
        OR OLD.lease_check_at > NEW.lease_expires_at
        OR OLD.lease_check_at - now() <= (NEW.lease_expires_at - now()) / 2 THEN
    NEW.lease_check_at := NEW.lease_expires_at;
  ELSE
    NEW.lease_check_at := OLD.lease_check_at;
  END IF;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER issues_lease_check_at_inserted BEFORE INSERT ON issues FOR EACH ROW
  WHEN (NEW.lease_expires_at IS NOT NULL OR NEW.lease_check_at IS NOT NULL) EXECUTE FUNCTION retasc_lease_check_at();--> statement-breakpoint
CREATE TRIGGER issues_lease_check_at_updated BEFORE UPDATE OF lease_expires_at, lease_id, lease_check_at ON issues FOR EACH ROW
  EXECUTE FUNCTION retasc_lease_check_at();--> statement-breakpoint
-- The held leases only (issues_lease_expiry_idx finds them): as many as live claims.
UPDATE issues SET lease_check_at = lease_expires_at WHERE lease_id IS NOT NULL AND lease_expires_at IS NOT NULL;
