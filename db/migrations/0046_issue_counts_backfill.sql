-- The issues already there, counted once into issue_status_counts (decision 077). Its own
-- migration, after the triggers' commit: the count reads every issue without holding the lock
-- that creating a trigger takes, so claims go on while it runs; changes committed meanwhile
-- are kept and add on top (retasc_issue_counts_reset).
SELECT retasc_issue_counts_reset();
