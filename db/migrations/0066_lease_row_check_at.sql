-- leases.check_at, as issues.lease_check_at (0062, decision 097): the reclaim sweep's index read the
-- expiry, so every renewal of a lease wrote an entry into each index of leases. check_at is never
-- after expires_at and a renewal moves it only once it is within half a lease of now (then to the
-- new expiry), so most renewals are HOT. The trigger keeps it: no writer sets it.
ALTER TABLE "leases" ADD COLUMN "check_at" timestamp with time zone;--> statement-breakpoint
CREATE FUNCTION retasc_lease_row_check_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR OLD.check_at IS NULL OR OLD.check_at > NEW.expires_at
     OR OLD.check_at - now() <= (NEW.expires_at - now()) / 2 THEN
    NEW.check_at := NEW.expires_at;
  ELSE
    NEW.check_at := OLD.check_at;
  END IF;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER leases_check_at BEFORE INSERT OR UPDATE OF expires_at, check_at ON leases FOR EACH ROW
  EXECUTE FUNCTION retasc_lease_row_check_at();--> statement-breakpoint
-- The live leases only (leases_key_live_idx finds them).
UPDATE leases SET check_at = expires_at WHERE ended_at IS NULL;
