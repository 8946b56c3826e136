import { and, count, desc, eq } from "drizzle-orm";
import { issues, linearImportRuns, orgs, projects } from "../../db/schema/index.ts";
import type { Ctx } from "../context.ts";
import { offeredGhosts } from "../transfer/pipeline/ghosts.ts";
import { expireStaleFetch } from "../transfer/pipeline/run-row.ts";
import { pendingInvites } from "../orgs/invite-redeem.ts";
import type { AskHuman } from "../orgs/invite-questions.ts";
import { inScope, reachable } from "../orgs/scope.ts";

/** setup_status's states, in the order they win: the first that holds is the answer. */
export const setupStates = ["PENDING_INVITE", "IMPORT_FAILED", "IMPORT_RUNNING", "EMPTY_PROJECT", "GHOSTS_UNCLAIMED", "READY"] as const;
export type SetupState = (typeof setupStates)[number];

const livePhases = new Set(["fetching", "applying", "linking"]);
const decline = "__decline__";

/**
 * Where the caller stands in setting up, computed afresh from the server on every call (so it is
 * right after a restart, in another runtime, a week later), as one state with what to do next:
 * a pending invite for their human; the org's latest import (within their projects) failed or
 * running; their key's project (or, for an org-wide key, every project they see) without
 * issues; placeholders an import left that carry their human's email (and they have not dismissed);
 * else ready.
 */
export async function setupStatus(ctx: Ctx) {
  const { principal } = ctx;
  const [org] = await ctx.db.select({ id: orgs.id, name: orgs.name }).from(orgs).where(eq(orgs.id, principal.orgId));
  const [project] = principal.projectId
    ? await ctx.db.select({ id: projects.id, prefix: projects.prefix, name: projects.name }).from(projects).where(and(eq(projects.id, principal.projectId), eq(projects.orgId, principal.orgId)))
    : [];
  const answer = (state: SetupState, next: string, askHuman?: AskHuman[]) => ({ state, next, org: org!.name, project: project?.prefix ?? null, ...(askHuman ? { askHuman } : {}) });

  const invites = await pendingInvites(ctx);
  if (invites.length > 0) {
    return answer("PENDING_INVITE", "Your human has an invite to another org: put askHuman to them; accept_invite only if they say yes.", [
      {
        question: "You have been invited to join another Retasc org. Join it?",
        options: [
          ...invites.map((invite) => ({ value: invite.inviteId, label: `Join ${invite.orgName}`, detail: `as ${invite.role}; until ${invite.expiresAt.slice(0, 10)}` })),
          { value: decline, label: "Not now", detail: `stay in ${org!.name} only` },
        ],
        hint: `${decline}: call nothing.`,
        resume: { tool: "accept_invite", arg: "inviteId" },
      },
    ]);
  }

  await expireStaleFetch(ctx, ctx.db, principal.orgId);
  const [run] = await ctx.db
    .select({ phase: linearImportRuns.phase, source: linearImportRuns.source, done: linearImportRuns.done, total: linearImportRuns.total, error: linearImportRuns.error })
    .from(linearImportRuns)
    .where(and(eq(linearImportRuns.orgId, principal.orgId), inScope(principal, linearImportRuns.projectId)))
    .orderBy(desc(linearImportRuns.createdAt), desc(linearImportRuns.id))
    .limit(1);
  if (run?.phase === "failed") {
    return answer("IMPORT_FAILED", `The latest ${run.source} import did not finish (${run.error ?? "no reason recorded"}). Tell your human; they retry it on the Dash's Import page (an owner's or admin's agent can: latest_import says why, run_import retries). Setup is not complete.`);
  }
  if (run && livePhases.has(run.phase)) {
    return answer("IMPORT_RUNNING", `A ${run.source} import is ${run.phase} (${run.done} of ${run.total}); call setup_status (or, an owner's or admin's agent, latest_import) again to follow it.`);
  }

  const [filed] = await ctx.db
    .select({ n: count() })
    .from(issues)
    .where(and(reachable(principal, issues), project ? eq(issues.projectId, project.id) : undefined));
  if (filed!.n === 0) {
    const home = project ? `project ${project.prefix}` : org!.name;
    return answer("EMPTY_PROJECT", `Setup is complete and ${home} has no issues. Offer your human two ways on: describe what they are working on and you file it as issues (save_issue), or import a backlog from another tracker (run_import, for an owner or admin; or the Dash's Import page).`);
  }

  const ghosts = await offeredGhosts(ctx);
  if (ghosts.length > 0) {
    const named = ghosts.map((g) => `${g.name} (${g.source}, ghostId ${g.ghostId})`).join(", ");
    return answer(
      "GHOSTS_UNCLAIMED",
      `An import attributed history to placeholders carrying your human's email: ${named}. Not blocking: mention it once; ` +
        "claim_ghost makes that history theirs if they want it (without ghostId, all of these); dismiss_ghost_prompt if none is them. " +
        "Otherwise ready: next_issue.",
    );
  }
  return answer("READY", "Ready: next_issue takes the most urgent work; queue_status shows where things stand.");
}
