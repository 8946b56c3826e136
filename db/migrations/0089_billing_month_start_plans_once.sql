-- Issue 30, decision 121: the charge's month start is planned once per connection.
-- retasc_charge reads the org's billing month start (retasc_billing_month_start) before each
-- charge. As a SQL function that reads a table it cannot be inlined, and PostgreSQL parses,
-- analyzes and plans a SQL function's body again in every transaction that calls it from
-- PL/pgSQL (fmgr_sql). A lone claim or finish is one transaction, so each paid for that twice a
-- cycle with billing on (perf: fmgr_sql, 1.9% of a batched cycle's samples). In PL/pgSQL the
-- statement's plan is kept for the connection. The rule, the org's local month, is unchanged.
CREATE OR REPLACE FUNCTION retasc_billing_month_start(p_org_id text, p_now timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT date_trunc('month', p_now AT TIME ZONE o.time_zone) AT TIME ZONE o.time_zone FROM orgs o WHERE o.id = p_org_id);
END $$;
