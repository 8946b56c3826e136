import { z } from "zod";
import type { CheckConclusion, ConnectorProvider } from "../../db/schema/index.ts";
import { commitShaSchema } from "../issues/schemas.ts";
import type { CheckReport } from "../verification/verdict.ts";

/**
 * CI results a connector reads (decision 045): GitHub's check_suite, check_run, status and
 * workflow_run, GitLab's Pipeline Hook. Each becomes the reports it carries and what they are
 * about (the commit, its branch, its requests), matched to finishes by server/verification.
 */
export const ciEvents: Record<ConnectorProvider, ReadonlySet<string>> = {
  github: new Set(["check_suite", "check_run", "status", "workflow_run"]),
  gitlab: new Set(["Pipeline Hook"]),
};

export interface CiEvent {
  /** The run's own id and attempt, so a delivery repeated under a new id is a duplicate. */
  id: string;
  commit: string;
  /** Branches whose head the run's commit is. */
  branches: string[];
  /** Pull/merge request numbers the run is for. */
  requests: string[];
  reports: CheckReport[];
}

const FAILED = new Set(["failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale", "error", "failed", "canceled"]);
const PASSED = new Set(["success", "neutral", "skipped"]);

/** A finished run's conclusion, or pending while it runs. */
function conclusionOf(status: string | null | undefined, conclusion: string | null | undefined): CheckConclusion {
  if (status && status !== "completed") return "pending";
  if (conclusion && PASSED.has(conclusion)) return "success";
  if (conclusion && FAILED.has(conclusion)) return "failure";
  return "pending";
}

const sha = commitShaSchema;
const text = z.string().max(500);
const url = z.string().max(2000).nullish();
const requests = z.array(z.looseObject({ number: z.number().int() })).nullish();

const checkRun = z.looseObject({
  check_run: z.looseObject({
    id: z.number(),
    name: text,
    head_sha: sha,
    status: text,
    conclusion: text.nullish(),
    html_url: url,
    check_suite: z.looseObject({ head_branch: text.nullish() }).nullish(),
    pull_requests: requests,
  }),
});
const checkSuite = z.looseObject({
  check_suite: z.looseObject({
    id: z.number(),
    head_sha: sha,
    head_branch: text.nullish(),
    status: text.nullish(),
    conclusion: text.nullish(),
    app: z.looseObject({ name: text }).nullish(),
    pull_requests: requests,
  }),
});
const status = z.looseObject({
  id: z.number(),
  sha,
  state: text,
  context: text,
  target_url: url,
  branches: z.array(z.looseObject({ name: text, commit: z.looseObject({ sha: z.string() }).nullish() })).nullish(),
});
const workflowRun = z.looseObject({
  workflow_run: z.looseObject({
    id: z.number(),
    run_attempt: z.number().nullish(),
    name: text,
    head_sha: sha,
    head_branch: text.nullish(),
    status: text,
    conclusion: text.nullish(),
    html_url: url,
    pull_requests: requests,
  }),
});
const pipeline = z.looseObject({
  object_attributes: z.looseObject({ id: z.number(), sha, ref: text.nullish(), status: text, url: url }),
  merge_request: z.looseObject({ iid: z.number() }).nullish(),
  builds: z.array(z.looseObject({ name: text, status: text, id: z.number().nullish() })).nullish(),
});

const heads = (branch: string | null | undefined) => (branch ? [branch] : []);
const numbers = (prs: { number: number }[] | null | undefined) => (prs ?? []).map((pr) => String(pr.number));
/** GitLab's job and pipeline statuses, as GitHub's status/conclusion pair. */
const gitlabConclusion = (s: string) => conclusionOf(["success", "failed", "canceled", "skipped"].includes(s) ? "completed" : s, s);

/** The CI event a delivery carries, or null when it is not one (or not one a run is read from). */
export function ciEventOf(provider: ConnectorProvider, event: string, body: unknown): CiEvent | null {
  if (!ciEvents[provider].has(event)) return null;
  switch (event) {
    case "check_run": {
      const run = checkRun.parse(body).check_run;
      return {
        id: `check_run:${run.id}:${run.status}:${run.conclusion ?? ""}`,
        commit: run.head_sha,
        branches: heads(run.check_suite?.head_branch),
        requests: numbers(run.pull_requests),
        reports: [{ check: run.name, conclusion: conclusionOf(run.status, run.conclusion), url: run.html_url ?? null, commit: run.head_sha }],
      };
    }
    case "check_suite": {
      const suite = checkSuite.parse(body).check_suite;
      return {
        id: `check_suite:${suite.id}:${suite.status ?? ""}:${suite.conclusion ?? ""}`,
        commit: suite.head_sha,
        branches: heads(suite.head_branch),
        requests: numbers(suite.pull_requests),
        reports: [{ check: suite.app?.name ?? "check_suite", conclusion: conclusionOf(suite.status, suite.conclusion), url: null, commit: suite.head_sha }],
      };
    }
    case "status": {
      const s = status.parse(body);
      const conclusion: CheckConclusion = s.state === "success" ? "success" : s.state === "pending" ? "pending" : "failure";
      // A status names every branch that contains the commit: only those whose head it is count.
      const branches = (s.branches ?? []).filter((b) => b.commit?.sha?.toLowerCase() === s.sha).map((b) => b.name);
      return { id: `status:${s.id}`, commit: s.sha, branches, requests: [], reports: [{ check: s.context, conclusion, url: s.target_url ?? null, commit: s.sha }] };
    }
    case "workflow_run": {
      const run = workflowRun.parse(body).workflow_run;
      return {
        id: `workflow_run:${run.id}:${run.run_attempt ?? 1}:${run.status}:${run.conclusion ?? ""}`,
        commit: run.head_sha,
        branches: heads(run.head_branch),
        requests: numbers(run.pull_requests),
        reports: [{ check: run.name, conclusion: conclusionOf(run.status, run.conclusion), url: run.html_url ?? null, commit: run.head_sha }],
      };
    }
    case "Pipeline Hook": {
      const p = pipeline.parse(body);
      const run = p.object_attributes;
      // The pipeline itself, and each job by name: a project's required checks name jobs.
      const jobs = (p.builds ?? []).map((b) => ({ check: b.name, conclusion: gitlabConclusion(b.status), url: null, commit: run.sha }));
      return {
        id: `pipeline:${run.id}:${run.status}:${jobs.map((j) => `${j.check}=${j.conclusion}`).join(",")}`,
        commit: run.sha,
        branches: heads(run.ref),
        requests: p.merge_request ? [String(p.merge_request.iid)] : [],
        reports: [{ check: "pipeline", conclusion: gitlabConclusion(run.status), url: run.url ?? null, commit: run.sha }, ...jobs],
      };
    }
  }
  return null;
}
