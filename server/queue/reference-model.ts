/**
 * A small, plain, in-memory reference of dispatch written from docs/architecture.md#dispatch,
 * not from the engine: the model-based test runs it side by side with the engine, and the
 * concurrency test uses its ranking to recompute the dispatch order from scratch.
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

export type Status = "todo" | "doing" | "blocked" | "review" | "done" | "canceled";
export type SlaName = "none" | "ok" | "warning" | "breaching" | "breached";
export type RelationKind = "blocks" | "blocked_by" | "related" | "duplicate";
export type RefusalCode =
  | "NOT_FOUND"
  | "CONTAINER"
  | "STATUS_NOT_CLAIMABLE"
  | "ALREADY_CLAIMED"
  | "BLOCKED"
  | "SELF_REVIEW"
  | "CLAIM_CAP"
  | "STALE_CLAIM"
  | "INVALID_INPUT"
  | "CYCLE";

export const isClosed = (status: Status) => status === "done" || status === "canceled";

// ---------------------------------------------------------------------------------------------
// Ranking, from raw facts.

/** The ranking facts of one issue, as a person would write them down. */
export interface RankFacts {
  key: string;
  number: number;
  work: boolean;
  status: Status;
  /** 0 none, 1 urgent, 2 high, 3 medium, 4 low. */
  priority: number;
  dueAt: number | null;
  /** When the deadline was set (creation when set at creation). */
  windowStart: number | null;
  createdAt: number;
}

export interface Rank {
  sla: SlaName;
  own: number;
  level: number;
  /** Earliest deadline among the issue and everything open it gates. */
  due: number | null;
}

const LEVEL_BY_PRIORITY: Record<number, number> = { 0: 0, 4: 1, 3: 2, 2: 3, 1: 4 };

/** Deadline pressure over the window [windowStart, dueAt], in exact integer arithmetic. */
export function deadlinePressure(dueAt: number | null, windowStart: number | null, now: number): { sla: SlaName; floor: number } {
  if (dueAt === null) return { sla: "none", floor: 0 };
  if (now >= dueAt) return { sla: "breached", floor: 5 };
  const start = Math.min(windowStart ?? dueAt, dueAt);
  const window = dueAt - start;
  const elapsed = now - start;
  if (elapsed * 10 >= window * 9) return { sla: "breaching", floor: 4 };
  if (elapsed * 4 >= window * 3) return { sla: "warning", floor: 3 };
  return { sla: "ok", floor: 0 };
}

/** Own level, effective level and effective deadline of every issue. `blocks` pairs are [blocker, blocked]. */
export function rankAll(issues: readonly RankFacts[], blocks: Iterable<readonly [string, string]>, now: number): Map<string, Rank> {
  const byKey = new Map(issues.map((i) => [i.key, i]));
  const gates = new Map<string, string[]>();
  for (const [source, target] of blocks) gates.set(source, [...(gates.get(source) ?? []), target]);
  const ranks = new Map<string, Rank>();
  const visit = (key: string): Rank => {
    const known = ranks.get(key);
    if (known) return known;
    const issue = byKey.get(key)!;
    const pressure = deadlinePressure(issue.dueAt, issue.windowStart, now);
    // A closed issue feels no deadline pressure: it ranks by its priority alone.
    const own = isClosed(issue.status) ? LEVEL_BY_PRIORITY[issue.priority]! : Math.max(LEVEL_BY_PRIORITY[issue.priority]!, pressure.floor);
    let level = own;
    let due = isClosed(issue.status) ? null : issue.dueAt;
    if (!isClosed(issue.status)) {
      for (const target of gates.get(key) ?? []) {
        if (isClosed(byKey.get(target)!.status)) continue;
        const gated = visit(target);
        level = Math.max(level, gated.level);
        if (gated.due !== null && (due === null || gated.due < due)) due = gated.due;
      }
    }
    const rank = { sla: isClosed(issue.status) ? ("none" as const) : pressure.sla, own, level, due };
    ranks.set(key, rank);
    return rank;
  };
  for (const issue of issues) visit(issue.key);
  return ranks;
}

/** The total order (docs/architecture.md#order): level, review first, earliest deadline, oldest, lowest number. */
export function dispatchCompare(a: RankFacts & { rank: Rank }, b: RankFacts & { rank: Rank }): number {
  if (a.rank.level !== b.rank.level) return b.rank.level - a.rank.level;
  const ar = a.status === "review" ? 0 : 1;
  const br = b.status === "review" ? 0 : 1;
  if (ar !== br) return ar - br;
  const ad = a.rank.due ?? Number.POSITIVE_INFINITY;
  const bd = b.rank.due ?? Number.POSITIVE_INFINITY;
  if (ad !== bd) return ad - bd;
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  return a.number - b.number;
}

/** An issue as dispatch sees it: ranking facts plus lane and lease. */
export interface DispatchFacts extends RankFacts {
  assignee: string | null;
  /** The person whose work went into review. */
  submitter: string | null;
  leaseLive: boolean;
}

/** Dispatchable issues passing `lane`, in dispatch order, each with its rank. */
export function readyInOrder<T extends DispatchFacts>(
  issues: readonly T[],
  blocks: readonly (readonly [string, string])[],
  now: number,
  lane: (issue: T) => boolean = () => true,
): (T & { rank: Rank })[] {
  const ranks = rankAll(issues, blocks, now);
  const status = new Map(issues.map((i) => [i.key, i.status]));
  const openBlocked = new Set(blocks.filter(([source]) => !isClosed(status.get(source)!)).map(([, target]) => target));
  return issues
    .filter((i) => i.work && ["todo", "doing", "review"].includes(i.status) && !openBlocked.has(i.key) && !i.leaseLive && lane(i))
    .map((i) => ({ ...i, rank: ranks.get(i.key)! }))
    .sort(dispatchCompare);
}

/** Lanes: the person's own and unassigned work, never their own work up for review. */
export const lanes = (person: string) => ({
  mine: (i: DispatchFacts) => (i.assignee === null || i.assignee === person) && !(i.status === "review" && i.submitter === person),
  all: (i: DispatchFacts) => !(i.status === "review" && i.submitter === person),
  others: (i: DispatchFacts) => i.assignee !== null && i.assignee !== person && !(i.status === "review" && i.submitter === person),
});

// ---------------------------------------------------------------------------------------------
// The stateful model of claims, leases, review and relations.

export interface ModelAgent {
  name: string;
  person: string;
  key: string;
}

export interface ModelCheckpoint {
  done: string | null;
  next: string | null;
  gotchas: string | null;
  note: string | null;
  branch: string | null;
}

interface Lease {
  token: string;
  agent: ModelAgent;
  fence: number;
  expiresAt: number;
}

export interface ModelIssue extends DispatchFacts {
  identifier: string;
  title: string;
  fence: number;
  lease: Lease | null;
  /** The key whose lease a finish ended, while that lease is the issue's last: a retried finish from it succeeds. */
  finishedBy: string | null;
  checkpoint: ModelCheckpoint | null;
}

export type Outcome<T> = { ok: true; value: T } | Refusal;
export interface Refusal {
  ok: false;
  code: RefusalCode;
  /** Agent name of the live holder named by ALREADY_CLAIMED / STALE_CLAIM (null: nobody). */
  holder?: string | null;
  /** Open blockers named by BLOCKED. */
  blockers?: string[];
}

export interface ModelClaim {
  identifier: string;
  token: string;
  fence: number;
  expiresAt: number;
  branch: string;
  checkpoint: ModelCheckpoint | null;
  otherClaims: number;
}
export interface ModelEmpty {
  identifier: null;
  ready: number;
  otherLanes: number;
}

const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
const refuse = (code: RefusalCode, extra: Omit<Refusal, "ok" | "code"> = {}): Refusal => ({ ok: false, code, ...extra });

/** `rtsc-7/some-title`: lower-case identifier and a slug of the title. */
export function expectedBranch(identifier: string, title: string): string {
  const slug = title.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).join("-").slice(0, 48).replace(/-+$/, "");
  return slug ? `${identifier.toLowerCase()}/${slug}` : identifier.toLowerCase();
}

export class DispatchModel {
  readonly issues: ModelIssue[] = [];
  /** `blocks` edges as [blocker, blocked] identifiers. */
  readonly blocks: [string, string][] = [];
  /** related / duplicate links, stored once per unordered pair. */
  readonly links = new Set<string>();
  /** Every claim token ever handed out, with who got it. */
  readonly tokens: { token: string; agent: string }[] = [];

  constructor(
    readonly prefix: string,
    private readonly clock: () => number,
    readonly ttlMs: number,
    readonly cap: number,
  ) {}

  get now() {
    return this.clock();
  }

  find(identifier: string): ModelIssue | undefined {
    return this.issues.find((i) => i.identifier === identifier);
  }

  private live(issue: ModelIssue): Lease | null {
    return issue.lease && issue.lease.expiresAt > this.now ? issue.lease : null;
  }

  /** The issues with leaseLive brought up to date for the current time. */
  private facts(): ModelIssue[] {
    for (const issue of this.issues) issue.leaseLive = this.live(issue) !== null;
    return this.issues;
  }

  openBlockers(issue: ModelIssue): string[] {
    return this.blocks
      .filter(([source, target]) => target === issue.identifier && !isClosed(this.find(source)!.status))
      .map(([source]) => source)
      .sort();
  }

  ranks(): Map<string, Rank> {
    return rankAll(this.issues, this.blocks, this.now);
  }

  liveClaimsOf(key: string): number {
    return this.issues.filter((i) => this.live(i)?.agent.key === key).length;
  }

  private hasPath(from: string, to: string): boolean {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length > 0) {
      const at = stack.pop()!;
      if (at === to) return true;
      if (seen.has(at)) continue;
      seen.add(at);
      for (const [source, target] of this.blocks) if (source === at) stack.push(target);
    }
    return false;
  }

  // --- writes of issues and relations

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
   * A status write. With a token it must be the live one; done and review need it (they
   * finish the work), canceling held work needs it. Only finishing frees the lease.
   */
  setStatus(
    by: ModelAgent,
    identifier: string,
    to: Status,
    options: { token?: string; reviewer?: string | null } = {},
  ): Outcome<null> {
    const issue = this.find(identifier)!;
    const lease = this.live(issue);
    const tokenIsLive = options.token !== undefined && lease?.token === options.token;
    const stale = () => refuse("STALE_CLAIM", { holder: lease?.agent.name ?? null });
    const retried = to === issue.status && (isClosed(to) || to === "review") && !lease && issue.finishedBy === by.key;
    if (options.token !== undefined && !tokenIsLive && retried) return ok(null);
    if (options.token !== undefined && !tokenIsLive) return stale();
    const reviewer = options.reviewer !== undefined ? options.reviewer : issue.assignee;
    const from = issue.status;
    let frees = false;
    if (to !== from) {
      if (isClosed(from)) return refuse("INVALID_INPUT");
      if (to === "done" || to === "review") {
        if (!issue.work) {
          if (to === "review") return refuse("CONTAINER");
        } else {
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
    if (to === "review") {
      const submitter = from === "review" ? issue.submitter : by.person;
      if (reviewer === null) return refuse("INVALID_INPUT");
      if (reviewer === submitter) return refuse("SELF_REVIEW");
    }
    if (options.reviewer !== undefined) issue.assignee = options.reviewer;
    if (to === "review" && from !== "review") issue.submitter = by.person;
    if (from === "review" && to === "todo") issue.submitter = null;
    issue.status = to;
    if (frees) {
      issue.finishedBy = issue.lease!.agent.key;
      issue.lease = null;
    }
    return ok(null);
  }

  // --- claims

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
    // Checkpoints merge: what is left out keeps the latest value; "" clears; the note is its own.
    const kept = issue.checkpoint;
    const merged = (sent: string | null | undefined, before: string | null | undefined) => (sent !== undefined ? sent || null : (before ?? null));
    issue.checkpoint = {
      done: merged(notes.done, kept?.done),
      next: merged(notes.next, kept?.next),
      gotchas: merged(notes.gotchas, kept?.gotchas),
      note: notes.note || null,
      branch: notes.branch ?? kept?.branch ?? null,
    };
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
