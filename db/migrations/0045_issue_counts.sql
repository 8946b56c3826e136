CREATE TABLE "issue_count_changes" (
	"from_status" text,
	"to_status" text,
	"n" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "issue_status_counts" (
	"status" text PRIMARY KEY NOT NULL,
	"n" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- Issues by status for /metrics, kept current instead of counted at each scrape (decision 077).
-- Triggers append what changed, in the change's transaction: one row per inserting or deleting
-- statement (from its transition table) and one per status change. Appending takes no lock a
-- concurrent claim waits on, and an update that leaves the status alone (a heartbeat) fires
-- nothing. Issues is the one hot table here: creating the triggers takes a brief lock on it
-- (decision 069); the count of what is already there is the next migration, outside this lock.
CREATE OR REPLACE FUNCTION retasc_issue_counts_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO issue_count_changes (to_status, n) SELECT status, count(*) FROM new_rows GROUP BY status;
  ELSE
    INSERT INTO issue_count_changes (from_status, n) SELECT status, count(*) FROM old_rows GROUP BY status;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER issues_count_inserted AFTER INSERT ON issues REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION retasc_issue_counts_rows();--> statement-breakpoint
CREATE TRIGGER issues_count_deleted AFTER DELETE ON issues REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION retasc_issue_counts_rows();--> statement-breakpoint
CREATE OR REPLACE FUNCTION retasc_issue_counts_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO issue_count_changes (from_status, to_status, n) VALUES (OLD.status, NEW.status, 1);
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER issues_count_status AFTER UPDATE OF status ON issues FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION retasc_issue_counts_status();--> statement-breakpoint
CREATE OR REPLACE FUNCTION retasc_issue_counts_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM issue_count_changes;
  UPDATE issue_status_counts SET n = 0;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER issues_count_truncated AFTER TRUNCATE ON issues
  FOR EACH STATEMENT EXECUTE FUNCTION retasc_issue_counts_truncated();--> statement-breakpoint
-- The exact count: the folded counts plus the changes not yet folded, in one snapshot.
-- The changes are summed per (from, to) pair first: a plain grouping, the cheapest pass over them.
CREATE OR REPLACE FUNCTION retasc_issue_counts() RETURNS TABLE (status text, n bigint) LANGUAGE sql STABLE AS $$
  WITH pairs AS (SELECT ch.from_status, ch.to_status, sum(ch.n)::bigint AS n FROM issue_count_changes ch GROUP BY 1, 2)
  SELECT s.status, sum(s.n)::bigint FROM (
    SELECT c.status, c.n FROM issue_status_counts c
    UNION ALL SELECT p.to_status, p.n FROM pairs p WHERE p.to_status IS NOT NULL
    UNION ALL SELECT p.from_status, -p.n FROM pairs p WHERE p.from_status IS NOT NULL
  ) s GROUP BY s.status
$$;--> statement-breakpoint
-- Folds at most `batch` changes into the counts (the sweep, every few seconds). One fold or
-- reset at a time, so a reset's snapshot sees every fold before it.
CREATE OR REPLACE FUNCTION retasc_issue_counts_fold(batch integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE folded integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('retasc_issue_counts'));
  WITH gone AS (
         DELETE FROM issue_count_changes
         WHERE ctid = ANY (ARRAY(SELECT ctid FROM issue_count_changes LIMIT batch))
         RETURNING from_status, to_status, n),
       pairs AS (SELECT g.from_status, g.to_status, sum(g.n)::bigint AS n FROM gone g GROUP BY 1, 2),
       moves AS (
         SELECT m.status, sum(m.n)::bigint AS n FROM (
           SELECT p.to_status AS status, p.n FROM pairs p WHERE p.to_status IS NOT NULL
           UNION ALL SELECT p.from_status, -p.n FROM pairs p WHERE p.from_status IS NOT NULL) m
         GROUP BY m.status),
       applied AS (
         INSERT INTO issue_status_counts AS c (status, n) SELECT status, n FROM moves
         ON CONFLICT (status) DO UPDATE SET n = c.n + excluded.n RETURNING 1)
  SELECT count(*)::int INTO folded FROM gone;
  RETURN folded;
END $$;--> statement-breakpoint
-- Recounts from scratch in one statement, so its one snapshot counts exactly the issues whose
-- changes it deletes; changes committed after it stay and add on top. The count reads every
-- issue but locks none: writes go on meanwhile.
CREATE OR REPLACE FUNCTION retasc_issue_counts_reset() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE total bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('retasc_issue_counts'));
  WITH gone AS (DELETE FROM issue_count_changes RETURNING 1),
       counted AS (SELECT i.status, count(*)::bigint AS n FROM issues i GROUP BY i.status),
       zeroed AS (
         UPDATE issue_status_counts c SET n = 0
         WHERE NOT EXISTS (SELECT 1 FROM counted WHERE counted.status = c.status) RETURNING 1),
       applied AS (
         INSERT INTO issue_status_counts AS c (status, n) SELECT status, n FROM counted
         ON CONFLICT (status) DO UPDATE SET n = excluded.n RETURNING 1)
  SELECT coalesce(sum(counted.n), 0)::bigint INTO total FROM counted;
  RETURN total;
END $$;
