-- Decision 109. leases_check_at (0066) was a BEFORE INSERT OR UPDATE OF expires_at, check_at row
-- trigger. PostgreSQL locks the row for any BEFORE UPDATE row trigger before it looks at the
-- trigger's columns, so every update of a lease, the end of a finish included, wrote a Heap LOCK
-- record (54 B) before its update. The trigger now keeps check_at on insert only; the three
-- renewals (heartbeat-held.ts, lease.ts renew, session-renewal.ts) set it with
-- retasc_renewed_check_at, the same rule: never after the expiry, moved to the new expiry only once
-- it is within half a lease of now.
CREATE FUNCTION retasc_renewed_check_at(p_check_at timestamptz, p_expires_at timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_check_at IS NULL OR p_check_at > p_expires_at OR p_check_at - now() <= (p_expires_at - now()) / 2
              THEN p_expires_at ELSE p_check_at END
$$;--> statement-breakpoint
DROP TRIGGER leases_check_at ON leases;--> statement-breakpoint
CREATE TRIGGER leases_check_at BEFORE INSERT ON leases FOR EACH ROW EXECUTE FUNCTION retasc_lease_row_check_at();
