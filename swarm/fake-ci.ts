import crypto from "node:crypto";
import { sql } from "drizzle-orm";
import { query, type Db } from "../db/client.ts";

/**
 * The swarm's CI: it watches the project's finishes awaiting verification and, for each, after a
 * short run, attests one check of the finish's commit over HTTP with a CI key, as `retasc verify`
 * does (POST /api/ci/verify, decision 045) to a random app instance. A seeded share of commits
 * fails. Each claim's work ends in a commit of its own (swarm/agent-spec.ts commitFor), so a reopened
 * issue's next finish is a new commit with its own draw; after `maxFailures` red runs an issue's
 * commits pass, so every issue ends green. Attestations that get no answer (an instance killed,
 * PostgreSQL restarting) are sent again on a later tick; an attestation for a finish that is no
 * longer pending records nothing, so resends are harmless.
 */
export interface FakeCiOptions {
  db: Db;
  orgId: string;
  projectId: string;
  /** The app instances' base URLs (http://host:port). */
  bases: string[];
  ciKey: string;
  seed: number;
  /** Share of commits that fail. */
  failRate: number;
  /** Red runs an issue may have; its later commits pass. */
  maxFailures: number;
  /** How long a run takes, from the moment the finish is seen pending: [min, max) ms. */
  runMs?: [number, number];
}

export interface FakeCiFigures {
  /** Commits attested (one check each) and answered. */
  attested: number;
  failed: number;
  passed: number;
  /** Attestations sent again after no answer (transport, 5xx). */
  resent: number;
  /** Answers other than 200 that were not an outage's (kept for the run's fault errors). */
  refused: string[];
  /** Issues whose runs failed, by how many times. */
  failuresByIssue: Record<string, number>;
  /** From the finish (verification_at) to the verdict's answer, per attested commit. */
  finishToVerdictMs: number[];
}

const CHECK = "test";

export class FakeCi {
  private readonly scheduled = new Map<string, number>();
  private readonly inFlight = new Set<string>();
  private readonly answered = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  private readonly figures: FakeCiFigures = { attested: 0, failed: 0, passed: 0, resent: 0, refused: [], failuresByIssue: {}, finishToVerdictMs: [] };

  constructor(private readonly options: FakeCiOptions) {}

  /** Whether a commit's run is red: a seeded draw per commit. */
  private red(commit: string): boolean {
    const draw = crypto.createHash("sha256").update(`${this.options.seed}:${commit}`).digest().readUInt32BE(0) / 2 ** 32;
    return draw < this.options.failRate;
  }

  /** Looks for finishes awaiting verification, and attests those whose run is over. Never throws. */
  async tick(): Promise<void> {
    const { db, orgId, projectId } = this.options;
    let pending: { identifier: string; commit: string; finished_ms: number }[];
    try {
      pending = await query(
        db,
        sql`select identifier, evidence_commit as commit, (extract(epoch from verification_at) * 1000)::float8 as finished_ms
            from issues where org_id = ${orgId} and project_id = ${projectId} and status = 'done' and verification = 'pending' and evidence_commit is not null`,
      );
    } catch {
      return; // PostgreSQL is restarting
    }
    const now = Date.now();
    const [min, max] = this.options.runMs ?? [150, 1200];
    for (const { identifier, commit, finished_ms } of pending) {
      const run = `${identifier}@${commit}`;
      if (this.answered.has(run) || this.inFlight.has(run)) continue;
      const due = this.scheduled.get(run);
      if (due === undefined) {
        this.scheduled.set(run, now + min + Math.random() * (max - min));
        continue;
      }
      if (due > now) continue;
      this.inFlight.add(run);
      const sending = this.attest(identifier, commit, Number(finished_ms)).finally(() => {
        this.inFlight.delete(run);
        this.running.delete(sending);
      });
      this.running.add(sending);
    }
  }

  private async attest(identifier: string, commit: string, finishedMs: number): Promise<void> {
    const run = `${identifier}@${commit}`;
    const failedBefore = this.failures.get(identifier) ?? 0;
    const fail = failedBefore < this.options.maxFailures && this.red(commit);
    const base = this.options.bases[Math.floor(Math.random() * this.options.bases.length)]!;
    const body = { identifier, commit, status: fail ? "fail" : "pass", check: CHECK, url: `https://ci.example/runs/${commit.slice(0, 12)}` };
    let response: Response;
    try {
      response = await fetch(`${base}/api/ci/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${this.options.ciKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(20_000),
      });
    } catch {
      this.figures.resent++;
      return; // no answer: a later tick sends it again
    }
    const text = await response.text().catch(() => "");
    if (response.status >= 500 || response.status === 429) {
      this.figures.resent++;
      return;
    }
    // A resend that crossed the issue's reopening and next finish names the old commit: CONFLICT, harmless.
    if (response.status === 409) {
      this.answered.add(run);
      return;
    }
    if (response.status !== 200) {
      this.figures.refused.push(`${response.status} for ${identifier} ${commit.slice(0, 12)}: ${text.slice(0, 300)}`);
      this.answered.add(run);
      return;
    }
    this.answered.add(run);
    const reply = JSON.parse(text) as { recorded?: boolean };
    if (!reply.recorded) return; // an earlier attempt's answer was lost and it was recorded then
    this.figures.attested++;
    this.figures.finishToVerdictMs.push(Date.now() - finishedMs);
    if (fail) {
      this.figures.failed++;
      this.failures.set(identifier, failedBefore + 1);
      this.figures.failuresByIssue[identifier] = failedBefore + 1;
    } else this.figures.passed++;
  }

  /** Waits for the attestations under way. */
  async settle(): Promise<void> {
    await Promise.all([...this.running]);
  }

  report(): FakeCiFigures {
    return this.figures;
  }
}
