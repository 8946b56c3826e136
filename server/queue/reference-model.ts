/**
 * A small, plain, in-memory reference of dispatch written from docs/architecture.md#dispatch,
 * not from the engine: the model-based test runs it side by side with the engine, and the
 * concurrency test uses its ranking to recompute the dispatch order from scratch.
 * By concern: the ranking in reference-ranking.ts, the state and the shapes of its answers in
 * reference-state.ts, the writes of issues and relations in reference-writes.ts, claims here.
 *
 * Everything is recomputed from the raw facts on every question (no stored ranking), so it
 * is slow and obviously right. Where the design is silent the model makes these choices:
 * - a threshold is reached at its instant ("once 75% has passed" means elapsed >= 75%);
 * - a terminal issue gates nothing, so urgency does not flow through it;
 * - claim_issue names the first reason in this order: NOT_FOUND, CONTAINER,
 *   STATUS_NOT_CLAIMABLE, ALREADY_CLAIMED, BLOCKED, SELF_REVIEW, CLAIM_CAP;
 * - a write that presents a claim token is checked for it before anything else;
 * - releasing with a note adds the note to the checkpoint, keeping done/next/gotchas/branch;
 * - next_batch treats any chain of `blocks` edges (whatever the statuses on it) as a path;
 * - sending review work back (review -> todo with the reviewer's token) frees the lease.
 */
import { lanes, readyInOrder } from "./reference-ranking.ts";
import { mergedCheckpoint, ok, refuse, type Lease, type ModelAgent, type ModelCheckpoint, type ModelClaim, type ModelEmpty, type ModelIssue, type Outcome } from "./reference-state.ts";
import { ModelWrites } from "./reference-writes.ts";

/** `rtsc-7/some-title`: lower-case identifier and a slug of the title. */
export function expectedBranch(identifier: string, title: string): string {
  const slug = title.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).join("-").slice(0, 48).replace(/-+$/, "");
  return slug ? `${identifier.toLowerCase()}/${slug}` : identifier.toLowerCase();
}

/** The whole model: its state and writes, and here the claims, leases and their renewals. */
export class DispatchModel extends ModelWrites {
  private grant(agent: ModelAgent, issue: ModelIssue, otherClaims: number): ModelClaim {
    issue.fence += 1;
    const token = `${issue.identifier}#${issue.fence}`;
    issue.lease = { token, agent, fence: issue.fence, expiresAt: this.now + this.ttlMs };
    issue.finishedBy = null;
    if (issue.status !== "review") issue.status = "doing";
    return this.handOut(agent, issue, token, otherClaims);
  }

  /** The holder claiming its own live lease again (a lost token): same fence, a new token, renewed. */
  private rebind(agent: ModelAgent, issue: ModelIssue, lease: Lease, otherClaims: number): ModelClaim {
    const token = `${issue.identifier}#${issue.fence}~${this.tokens.length}`;
    lease.token = token;
    lease.expiresAt = this.now + this.ttlMs;
    return this.handOut(agent, issue, token, otherClaims);
  }

  private handOut(agent: ModelAgent, issue: ModelIssue, token: string, otherClaims: number): ModelClaim {
    this.tokens.push({ token, agent: agent.name });
    return {
      identifier: issue.identifier,
      token,
      fence: issue.fence,
      expiresAt: issue.lease!.expiresAt,
      branch: issue.checkpoint?.branch ?? expectedBranch(issue.identifier, issue.title),
      checkpoint: issue.checkpoint ? { ...issue.checkpoint } : null,
      otherClaims,
    };
  }

  private empty(agent: ModelAgent, allLanes: boolean): ModelEmpty {
    const lane = lanes(agent.person);
    return {
      identifier: null,
      ready: readyInOrder(this.facts(), this.blocks, this.now, allLanes ? lane.all : lane.mine).length,
      otherLanes: allLanes ? 0 : readyInOrder(this.facts(), this.blocks, this.now, lane.others).length,
    };
  }

  nextIssue(agent: ModelAgent, allLanes: boolean): Outcome<ModelClaim | ModelEmpty> {
    const lane = lanes(agent.person);
    const top = readyInOrder(this.facts(), this.blocks, this.now, allLanes ? lane.all : lane.mine)[0];
    if (!top) return ok(this.empty(agent, allLanes));
    const live = this.liveClaimsOf(agent.key);
    if (live >= this.cap) return refuse("CLAIM_CAP");
    return ok(this.grant(agent, this.find(top.identifier)!, live));
  }

  /** Identifiers of the batch next_batch would hand out (claimed when `claim`). */
  nextBatch(agent: ModelAgent, n: number, allLanes: boolean, claim: boolean): Outcome<ModelClaim[] | string[] | ModelEmpty> {
    const lane = lanes(agent.person);
    const ready = readyInOrder(this.facts(), this.blocks, this.now, allLanes ? lane.all : lane.mine);
    const live = this.liveClaimsOf(agent.key);
    const limit = claim ? Math.min(n, this.cap - live) : n;
    if (claim && limit <= 0 && ready.length > 0) return refuse("CLAIM_CAP");
    const picked: string[] = [];
    const independent = (a: string, b: string) =>
      !this.hasPath(a, b) && !this.hasPath(b, a) && !this.links.has(`related:${[a, b].sort().join("|")}`) &&
      !this.links.has(`duplicate:${[a, b].sort().join("|")}`);
    for (const issue of ready) {
      if (picked.length >= limit) break;
      if (picked.every((p) => independent(p, issue.identifier))) picked.push(issue.identifier);
    }
    if (picked.length === 0) return ok(this.empty(agent, allLanes));
    if (!claim) return ok(picked);
    return ok(picked.map((identifier, i) => this.grant(agent, this.find(identifier)!, live + i)));
  }

  claimIssue(agent: ModelAgent, identifier: string): Outcome<ModelClaim> {
    const issue = this.find(identifier);
    if (!issue) return refuse("NOT_FOUND");
    if (!issue.work) return refuse("CONTAINER");
    if (!["todo", "doing", "review"].includes(issue.status)) return refuse("STATUS_NOT_CLAIMABLE");
    const lease = this.live(issue);
    // Every model agent is one key in one MCP session: only the holding agent rebinds without the token.
    if (lease?.agent.key === agent.key) return ok(this.rebind(agent, issue, lease, this.liveClaimsOf(agent.key) - 1));
    if (lease) return refuse("ALREADY_CLAIMED", { holder: lease.agent.name });
    const blockers = this.openBlockers(issue);
    if (blockers.length > 0) return refuse("BLOCKED", { blockers });
    if (issue.status === "review" && issue.submitter === agent.person) return refuse("SELF_REVIEW");
    const live = this.liveClaimsOf(agent.key);
    if (live >= this.cap) return refuse("CLAIM_CAP");
    return ok(this.grant(agent, issue, live));
  }

  private holding(token: string): { issue: ModelIssue; lease: Lease | null; live: boolean } {
    const issue = this.find(token.split("#")[0]!)!;
    const lease = this.live(issue);
    return { issue, lease, live: lease?.token === token };
  }

  heartbeat(token: string): Outcome<number> {
    const { lease, live } = this.holding(token);
    if (!live) return refuse("STALE_CLAIM", { holder: lease?.agent.name ?? null });
    lease!.expiresAt = this.now + this.ttlMs;
    return ok(lease!.expiresAt);
  }

  checkpoint(token: string, notes: Partial<ModelCheckpoint>): Outcome<number> {
    if (Object.values(notes).every((value) => value === undefined)) return refuse("INVALID_INPUT");
    const { issue, lease, live } = this.holding(token);
    if (!live) return refuse("STALE_CLAIM", { holder: lease?.agent.name ?? null });
    issue.checkpoint = mergedCheckpoint(issue.checkpoint, notes);
    lease!.expiresAt = this.now + this.ttlMs;
    return ok(lease!.expiresAt);
  }

  release(token: string, note?: string): Outcome<null> {
    const { issue, lease, live } = this.holding(token);
    if (!live) return refuse("STALE_CLAIM", { holder: lease?.agent.name ?? null });
    if (note !== undefined) {
      issue.checkpoint = { done: null, next: null, gotchas: null, branch: null, ...issue.checkpoint, note };
    }
    issue.lease = null;
    issue.finishedBy = null;
    return ok(null);
  }
}
