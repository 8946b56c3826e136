/**
 * The hot statements of dispatch, finish, the view reads, the leases and the charge, copied from
 * the SQL functions that run them (the latest definition of each), for db/partition-plan.test.ts
 * (issue 36, decision 099), kept by operation in db/testing/hot/. A copy keeps the statement as
 * written, PL/pgSQL variables and all (`p_org_id`, `v_row.id`: the test binds each as a parameter
 * of the type in `variableTypes`, hot/functions.ts), less its `INTO` target; `PERFORM` reads as
 * `SELECT`. `md5` (hotFunctions, hot/functions.ts) is that of the function's `pg_get_functiondef`:
 * when a function changes, the test fails until its statements are copied again and the hash
 * recorded anew. The heartbeat's statement is copied from TypeScript (server/queue/heartbeat-held.ts,
 * with the steps it takes from server/queue/beat-log.ts spliced in).
 */
import { billingStatements } from "./hot/billing.ts";
import { dispatchStatements } from "./hot/dispatch.ts";
import { leaseStatements } from "./hot/leases.ts";
import { readStatements } from "./hot/reads.ts";

/** Tables partitioned by hash of org_id in the test's scratch schema. */
export const hotTables = [
  "issues",
  "leases",
  "activity",
  "outbox",
  "relations",
  "checkpoints",
  "comments",
  "attachments",
  "billing_credit_slices",
  "billing_charges",
  "agent_keys",
];

export const partitions = 16;

/**
 * The tables that carry no org_id, each for a reason: they belong to no org, or arrive before
 * their org is known. Every other table carries it (an org-owned table added without it fails the
 * plan test). Which of these a stack per group of orgs keeps in the global directory: decision 099.
 */
export const globalTables = [
  // People and their sign-in (better-auth): a person belongs to several orgs.
  "user",
  "account",
  "session",
  "verification",
  "device_code",
  // OAuth clients, consents, grants and tokens: a token names its key's org only once resolved.
  "oauth_access_token",
  "oauth_client",
  "oauth_client_assertion",
  "oauth_client_resource",
  "oauth_consent",
  "oauth_grants",
  "oauth_refresh_token",
  "oauth_resource",
  // The orgs themselves.
  "orgs",
  // Per deployment: the issue counts /metrics reads (decision 077) and the jobs' receipts.
  "issue_count_changes",
  "issue_status_counts",
  "job_receipts",
];

/** Every hot statement, by operation. */
export const hotStatements = [...dispatchStatements, ...leaseStatements, ...readStatements, ...billingStatements];
