-- Issue 30, decision 122: a charge against the slice its transaction already holds is one
-- statement. In a batch of claims or finishes every charge after the first pays from the slice
-- the first one took (decision 079). It read that slice FOR UPDATE, updated it, and set
-- retasc.held_slice to the value it already had: three steps where the update alone, with the
-- covering condition in its WHERE and RETURNING the slice, does the same (the row is locked by
-- this transaction already, so nothing can change between the check and the debit). The debit is
-- written once: the held slice is tried first, and when it no longer covers, the loop picks one as
-- 0058 did (decisions 044 and 098 unchanged) and debits that. The setting is written only when a
-- slice was picked.
CREATE OR REPLACE FUNCTION retasc_charge(p_org_id text, p_user_id text, p_key_id text, p_runtime text, p_tool text, p_tier text,
                              p_amount bigint, p_issue_id text, p_refusable boolean, p_now timestamptz)
RETURNS text LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
  v_month timestamptz := retasc_billing_month_start(p_org_id, p_now);
  v_start integer := floor(random() * 16)::integer;
  v_cap bigint;
  v_slice integer;
  v_charged bigint := p_amount;
  v_held text := current_setting('retasc.held_slice', true);
  -- Set once this transaction holds a slice of any org; '' (not null) in a later transaction of
  -- the same session, the setting having been made there before.
  v_holding boolean := coalesce(v_held, '') <> '';
  -- Set once the slice to debit was chosen here rather than held before.
  v_picked boolean := false;
BEGIN
  IF p_refusable THEN
    -- Read without locks: concurrent charges can pass the cap by what they charge together.
    SELECT a.monthly_cap_micro_credits INTO v_cap FROM billing_accounts a WHERE a.org_id = p_org_id;
    IF v_cap IS NOT NULL AND p_amount + (SELECT coalesce(sum(s.month_spent), 0) FROM billing_credit_slices s
                                          WHERE s.org_id = p_org_id AND s.month_start = v_month) > v_cap THEN
      RETURN 'SPEND_CAP';
    END IF;
  END IF;
  -- The slice this transaction already holds, if it still covers the charge (a batch of claims
  -- then holds one slice, not one per claim): debited at once. Else one that covers it, from a
  -- random start, skipping those other charges hold; then, holding nothing, waiting for one;
  -- then consolidating; and that one debited.
  IF v_holding AND split_part(v_held, ':', 1) = p_org_id THEN
    v_slice := split_part(v_held, ':', 2)::integer;
  END IF;
  LOOP
    IF v_slice IS NULL THEN
      v_picked := true;
      SELECT s.slice INTO v_slice FROM billing_credit_slices s
       WHERE s.org_id = p_org_id AND s.given_remaining + s.bought_remaining >= p_amount
       ORDER BY (s.slice + 16 - v_start) % 16 LIMIT 1 FOR UPDATE SKIP LOCKED;
      IF v_slice IS NULL AND NOT v_holding
         AND EXISTS (SELECT 1 FROM billing_credit_slices s WHERE s.org_id = p_org_id AND s.xmax = pg_current_xact_id_if_assigned()::xid) THEN
        -- The pick above passed over a slice it had locked: one changed and committed while the
        -- pick ran, followed to its new version, locked, then no longer covering. PostgreSQL
        -- keeps that lock, so this transaction holds a slice after all, out of slice order, and
        -- must not wait for another (its holder may be waiting for this one). The transaction
        -- reruns instead (retryingConflicts), holding nothing (decision 098).
        RAISE EXCEPTION 'a credit slice passed over stayed locked; the transaction reruns' USING ERRCODE = 'serialization_failure';
      END IF;
      IF v_slice IS NULL AND NOT v_holding THEN
        -- Waiting, in slice order, in a subtransaction given up when nothing covers: a waited-for
        -- row that no longer covers once its holder commits stays locked (PostgreSQL keeps the
        -- lock of a row its recheck skips), so a wait from a random start held one drained slice
        -- while waiting for another, and near zero such charges deadlocked each other (decision 044).
        BEGIN
          SELECT s.slice INTO v_slice FROM billing_credit_slices s
           WHERE s.org_id = p_org_id AND s.given_remaining + s.bought_remaining >= p_amount
           ORDER BY s.slice LIMIT 1 FOR UPDATE;
          IF v_slice IS NULL THEN
            RAISE no_data_found;
          END IF;
        EXCEPTION WHEN no_data_found THEN
          v_slice := NULL;
        END;
      END IF;
      IF v_slice IS NULL THEN
        IF v_holding THEN
          -- A covering slice another transaction holds, or none: a transaction holding a slice
          -- may not wait for one (the holder of that one may be waiting for this one).
          -- lock_not_available when another holds any; the consolidation below then waits for nothing.
          PERFORM 1 FROM billing_credit_slices WHERE org_id = p_org_id ORDER BY slice FOR UPDATE NOWAIT;
        END IF;
        v_slice := retasc_consolidate_credit(p_org_id, p_amount);
        -- Every slice of the org is held now, covering or not: a later charge must not wait.
        PERFORM set_config('retasc.held_slice', p_org_id || ':' || coalesce(v_slice, 0), true);
      END IF;
      -- Nothing covers the charge: refused or waived below.
      EXIT WHEN v_slice IS NULL;
    END IF;
    -- The debit: the slice is this transaction's (held before or locked just now), so the
    -- covering check and the update are one step.
    UPDATE billing_credit_slices
       SET given_remaining = given_remaining - least(given_remaining, p_amount),
           bought_remaining = bought_remaining - (p_amount - least(given_remaining, p_amount)),
           month_spent = CASE WHEN month_start = v_month THEN month_spent + p_amount ELSE p_amount END,
           month_start = v_month
     WHERE org_id = p_org_id AND slice = v_slice AND given_remaining + bought_remaining >= p_amount
    RETURNING slice INTO v_slice;
    -- A slice picked covers; the held one may not any more, and then one is picked.
    EXIT WHEN v_slice IS NOT NULL OR v_picked;
  END LOOP;
  IF v_slice IS NULL THEN
    IF p_refusable THEN
      RETURN 'BILLING_INACTIVE';
    END IF;
    v_charged := 0;
  ELSIF v_picked THEN
    PERFORM set_config('retasc.held_slice', p_org_id || ':' || v_slice, true);
  END IF;
  INSERT INTO billing_charges (org_id, user_id, key_id, runtime, tool, tier, micro_credits, issue_id, created_at)
  VALUES (p_org_id, p_user_id, p_key_id, p_runtime, p_tool, p_tier, v_charged, p_issue_id, p_now);
  RETURN CASE WHEN v_charged < p_amount THEN 'waived' ELSE 'charged' END;
END
$$;
