/**
 * The reference model's state: its issues, relations, leases and handed-out tokens, the
 * shapes its operations answer, and the questions every operation asks of the state.
 */
import { isClosed, rankAll, type DispatchFacts, type Rank } from "./reference-ranking.ts";

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
  | "CYCLE"
  | "HANDOFF_REQUIRED"
  | "CLAIM_REQUIRED";

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

export interface Lease {
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

/** Checkpoints merge: what is left out keeps the latest value; "" clears done, next or gotchas; the note is its own. */
export function mergedCheckpoint(kept: ModelCheckpoint | null, notes: Partial<ModelCheckpoint>): ModelCheckpoint {
  const merged = (sent: string | null | undefined, before: string | null | undefined) => (sent !== undefined ? sent || null : (before ?? null));
  return {
    done: merged(notes.done, kept?.done),
    next: merged(notes.next, kept?.next),
    gotchas: merged(notes.gotchas, kept?.gotchas),
    note: notes.note || null,
    branch: notes.branch ?? kept?.branch ?? null,
  };
}

export const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
export const refuse = (code: RefusalCode, extra: Omit<Refusal, "ok" | "code"> = {}): Refusal => ({ ok: false, code, ...extra });

/** What the model knows at a moment: the writes (reference-writes.ts) and claims (reference-model.ts) change it. */
export class ModelState {
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

  protected live(issue: ModelIssue): Lease | null {
    return issue.lease && issue.lease.expiresAt > this.now ? issue.lease : null;
  }

  /** The issues with leaseLive brought up to date for the current time. */
  protected facts(): ModelIssue[] {
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

  protected hasPath(from: string, to: string): boolean {
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
}
