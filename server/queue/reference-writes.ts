import { isClosed, type Status } from "./reference-ranking.ts";
import { mergedCheckpoint, ModelState, ok, refuse, type ModelAgent, type Outcome, type RelationKind } from "./reference-state.ts";

/** The reference model's writes of issues and relations: create, relate, unrelate, priority, deadline, status. */
export class ModelWrites extends ModelState {
  create(input: {
    title: string;
    work: boolean;
    priority: number;
    blockedBy: string[];
    assignee: string | null;
    dueAt: number | null;
    status: "todo" | "blocked";
  }): Outcome<string> {
    const number = this.issues.length + 1;
    const identifier = `${this.prefix}-${number}`;
    this.issues.push({
      key: identifier,
      identifier,
      number,
      title: input.title,
      work: input.work,
      status: input.status,
      priority: input.priority,
      dueAt: input.dueAt,
      windowStart: input.dueAt === null ? null : this.now,
      reviewSince: null,
      createdAt: this.now,
      assignee: input.assignee,
      submitter: null,
      leaseLive: false,
      fence: 0,
      lease: null,
      finishedBy: null,
      checkpoint: null,
    });
    for (const blocker of new Set(input.blockedBy)) this.blocks.push([blocker, identifier]);
    return ok(identifier);
  }

  relate(a: string, b: string, kind: RelationKind): Outcome<boolean> {
    if (a === b) return refuse("INVALID_INPUT");
    if (kind === "blocks" || kind === "blocked_by") {
      const [source, target] = kind === "blocks" ? [a, b] : [b, a];
      if (this.hasPath(target, source)) return refuse("CYCLE");
      if (this.blocks.some(([s, t]) => s === source && t === target)) return ok(false);
      this.blocks.push([source, target]);
      return ok(true);
    }
    const pair = `${kind}:${[a, b].sort().join("|")}`;
    if (this.links.has(pair)) return ok(false);
    this.links.add(pair);
    return ok(true);
  }

  unrelate(a: string, b: string, kind: RelationKind): Outcome<boolean> {
    if (kind === "blocks" || kind === "blocked_by") {
      const [source, target] = kind === "blocks" ? [a, b] : [b, a];
      const at = this.blocks.findIndex(([s, t]) => s === source && t === target);
      if (at < 0) return ok(false);
      this.blocks.splice(at, 1);
      return ok(true);
    }
    return ok(this.links.delete(`${kind}:${[a, b].sort().join("|")}`));
  }

  setPriority(identifier: string, priority: number): Outcome<null> {
    this.find(identifier)!.priority = priority;
    return ok(null);
  }

  setDue(identifier: string, dueAt: number | null): Outcome<null> {
    const issue = this.find(identifier)!;
    issue.dueAt = dueAt;
    issue.windowStart = dueAt === null ? null : this.now;
    return ok(null);
  }

  /**
   * A status write. With a token it must be the live one; done and review of a work issue need
   * it (they finish the work), canceling held work needs it. Finishing, canceling held work and
   * sending review work back (review -> todo with the token) free the lease; nothing else does.
   */
  setStatus(
    by: ModelAgent,
    identifier: string,
    to: Status,
    options: { token?: string; reviewer?: string | null; handoff?: string } = {},
  ): Outcome<null> {
    const issue = this.find(identifier)!;
    const lease = this.live(issue);
    const tokenIsLive = options.token !== undefined && lease?.token === options.token;
    const stale = () => refuse("STALE_CLAIM", { holder: lease?.agent.name ?? null });
    // The finish that put it where it is, sent again: a success for the lease that finished it (with its
    // dead token or without one), refused for anyone else who sends no live token.
    const refinish = to === issue.status && (isClosed(to) || to === "review") && !lease;
    if (refinish && !tokenIsLive && issue.finishedBy === by.key) return ok(null);
    if (options.token !== undefined && !tokenIsLive) return stale();
    if (refinish && options.token === undefined) return stale();
    const reviewer = options.reviewer !== undefined ? options.reviewer : issue.assignee;
    const from = issue.status;
    let frees = false;
    if (to !== from) {
      if (isClosed(from)) return refuse("INVALID_INPUT");
      if (to === "done" || to === "review") {
        if (!issue.work) {
          if (to === "review") return refuse("CONTAINER");
        } else {
          // An unheld review is accepted under the reviewer's claim only (the model's agents are never people on the Dash).
          const unclaimedReview = to === "done" && from === "review" && !lease && options.token === undefined;
          if (unclaimedReview && issue.submitter === by.person) return refuse("SELF_REVIEW");
          if (unclaimedReview) return refuse("CLAIM_REQUIRED");
          if (!tokenIsLive) return stale();
          if (to === "done" && from === "review" && issue.submitter === by.person) return refuse("SELF_REVIEW");
          frees = true;
        }
      } else if (to === "canceled") {
        if (lease && !tokenIsLive) return refuse("ALREADY_CLAIMED", { holder: lease.agent.name });
        frees = lease !== null;
      } else if (from === "review" && to === "todo" && tokenIsLive) {
        frees = true;
      }
    }
    // Entering review says what was built (handoff), unless the latest checkpoint already says what is done.
    const entersReview = frees && to === "review";
    if (options.handoff === undefined ? entersReview && !issue.checkpoint?.done : !entersReview) {
      return refuse(options.handoff === undefined ? "HANDOFF_REQUIRED" : "INVALID_INPUT");
    }
    if (to === "review") {
      const submitter = from === "review" ? issue.submitter : by.person;
      if (reviewer === null) return refuse("INVALID_INPUT");
      if (reviewer === submitter) return refuse("SELF_REVIEW");
    }
    if (options.reviewer !== undefined) issue.assignee = options.reviewer;
    if (to === "review" && from !== "review") {
      issue.submitter = by.person;
      issue.reviewSince = this.now;
    }
    if (from === "review" && to === "todo") issue.submitter = null;
    issue.status = to;
    if (options.handoff !== undefined) issue.checkpoint = mergedCheckpoint(issue.checkpoint, { done: options.handoff });
    if (frees) {
      issue.finishedBy = issue.lease!.agent.key;
      issue.lease = null;
    }
    return ok(null);
  }
}
