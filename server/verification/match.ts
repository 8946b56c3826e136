import { sql } from "drizzle-orm";
import { query, type Db } from "../../db/client.ts";
import { systemPrincipal, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { recordReports, type ReportSource, type SettleOutcome } from "./settle.ts";
import type { CheckReport } from "./verdict.ts";

/** What a CI run is about: its commit, the branches it is the head of, the requests it ran for. */
export interface RunSubject {
  commit: string;
  branches: string[];
  requests: string[];
  reports: CheckReport[];
}

/**
 * The finishes of a project awaiting verification that a run is about: the evidence's commit
 * (a short SHA matches the full one it starts), or the named branch or request, whose head the
 * run is on.
 */
export async function pendingFinishesFor(db: Db, where: { orgId: string; projectId: string }, run: RunSubject): Promise<string[]> {
  const list = (values: string[]) => sql.join(values.map((v) => sql`${v}`), sql`, `);
  const branches = run.branches.length > 0 ? sql`evidence_branch in (${list(run.branches)})` : sql`false`;
  const requests = run.requests.length > 0 ? sql`substring(evidence_pr from '([0-9]+)$') in (${list(run.requests)})` : sql`false`;
  const rows = await query<{ identifier: string }>(
    db,
    sql`select identifier from issues
        where org_id = ${where.orgId} and project_id = ${where.projectId} and status = 'done' and verification = 'pending'
          and ((evidence_commit is not null and left(${run.commit}, length(evidence_commit)) = evidence_commit)
               or (evidence_branch is not null and ${branches})
               or (evidence_pr is not null and ${requests}))
        order by identifier`,
  );
  return rows.map((row) => row.identifier);
}

/**
 * Applies a connector's CI run (in the delivery's transaction, so a repeated job does nothing
 * twice) to every finish it is about. Returns what became of them, for the delivery's log.
 */
export async function settleCiRun(services: Services, tx: Db, where: { orgId: string; projectId: string }, run: RunSubject, source: ReportSource): Promise<string> {
  const matched = await pendingFinishesFor(tx, where, run);
  if (matched.length === 0) return "unmatched";
  const ctx = withPrincipal(services, systemPrincipal(where.orgId));
  const scope = { tx, ctx, cipher: await services.keyring.forOrg(tx, where.orgId), now: services.clock.now() };
  const outcomes: SettleOutcome[] = [];
  for (const identifier of matched) outcomes.push(await recordReports(scope, identifier, run.reports, source));
  return outcomes.includes("failed") ? "failed" : outcomes.includes("passed") ? "passed" : "pending";
}
