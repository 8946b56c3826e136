import fs from "node:fs";
import type { UrlFlag } from "../api.ts";
import { requireBinding, type ResolvedBinding } from "../binding.ts";
import { CliError } from "../errors.ts";
import { issueBranches, issueOfBranch, pruneBranch, removeWorktree, worktreesOf } from "../git.ts";
import { withMcp } from "../mcp.ts";
import { note, ok, printJson, say, tableWriter } from "../output.ts";
import { pages } from "../pages.ts";
import { asSession, currentSession } from "../session.ts";
import { keyFingerprint, readBindings, updateBindings, type ClaimRecord } from "../store.ts";
import type { CheckedClaim, IssueLine, IssueView, Released, Renewed } from "../wire-mcp.ts";
import { issueHere, normalizeIdentifier } from "./work.ts";

/**
 * Managing a lease from a terminal, over /mcp with the folder's key: the claims `retasc next`
 * and `retasc claim` made (and those an agent made through `retasc mcp proxy`), by the token
 * the keystore holds for them.
 */
interface JsonFlags extends UrlFlag {
  json?: boolean;
}
interface LeaseFlags extends JsonFlags {
  id?: string;
}

interface Held {
  binding: ResolvedBinding;
  identifier: string;
  record: ClaimRecord;
}

const claimsOf = (binding: ResolvedBinding): Record<string, ClaimRecord> => readBindings().claims[keyFingerprint(binding.key)] ?? {};

/** The issue named (--id or the positional), else the one of the branch checked out here, else the one claim held. */
function targetOf(flags: LeaseFlags, positionals: string[], binding: ResolvedBinding): string {
  const named = positionals[0] ?? flags.id;
  return named ? normalizeIdentifier(named, binding.workspace?.prefix) : issueHere(Object.keys(claimsOf(binding)), binding.workspace?.prefix);
}

function held(flags: LeaseFlags, positionals: string[]): Held {
  const binding = requireBinding(process.cwd());
  const identifier = targetOf(flags, positionals, binding);
  const record = claimsOf(binding)[identifier];
  if (!record) {
    throw new CliError("STALE_CLAIM", `no claim of ${identifier} was made with this folder's key on this machine`, `\`retasc check-claim ${identifier}\` says who holds it; \`retasc claim ${identifier}\` takes it (or gets your own lease back).`);
  }
  return { binding, identifier, record };
}

/** A claim the server says is gone: forget its token here too. */
async function forget(binding: ResolvedBinding, identifier: string): Promise<void> {
  await updateBindings((bindings) => {
    delete bindings.claims[keyFingerprint(binding.key)]?.[identifier];
  });
}

async function renewing<T extends { expiresAt: string }>(target: Held, work: () => Promise<T>): Promise<T> {
  try {
    const renewed = await work();
    await updateBindings((bindings) => {
      const record = bindings.claims[keyFingerprint(target.binding.key)]?.[target.identifier];
      if (record) record.expiresAt = renewed.expiresAt;
    });
    return renewed;
  } catch (error) {
    if (error instanceof CliError && error.code === "STALE_CLAIM" && !error.details?.youHold) await forget(target.binding, target.identifier);
    throw error;
  }
}

const until = (iso: string) => new Date(iso).toLocaleTimeString();

/** `retasc heartbeat`: renews the lease of one issue, or of every claim held from here. */
export async function heartbeat(flags: LeaseFlags & { all?: boolean }, positionals: string[]) {
  const binding = requireBinding(process.cwd());
  const mine = claimsOf(binding);
  const identifiers = flags.all ? Object.keys(mine) : [targetOf(flags, positionals, binding)];
  if (identifiers.length === 0) throw new CliError("STALE_CLAIM", "this folder's key holds no claim made on this machine", "`retasc next` claims one.");
  const results = await withMcp(binding, (call) =>
    Promise.all(
      identifiers.map(async (identifier) => {
        const target = held({ ...flags, id: identifier }, []);
        try {
          const renewed = await renewing(target, () => call<Renewed>("heartbeat", { identifier, claimToken: target.record.claimToken }));
          return { identifier, renewed: true as const, expiresAt: renewed.expiresAt };
        } catch (error) {
          if (!flags.all) throw error;
          const e = error as CliError;
          return { identifier, renewed: false as const, error: { code: e.code, message: e.message } };
        }
      }),
    ),
  );
  if (flags.json) return printJson(flags.all ? { leases: results } : results[0]);
  for (const r of results) {
    if (r.renewed) ok(`${r.identifier}: lease renewed until ${until(r.expiresAt)}.`);
    else note(`✗ ${r.identifier}: ${r.error.code}: ${r.error.message}`);
  }
}

/** `retasc checkpoint`: handoff notes for the next claimant, and a renewed lease. */
export async function checkpoint(flags: LeaseFlags & { done?: string; next?: string; gotchas?: string; note?: string; branch?: string }, positionals: string[]) {
  const notes = Object.fromEntries((["done", "next", "gotchas", "note", "branch"] as const).filter((k) => flags[k] !== undefined).map((k) => [k, flags[k]]));
  if (Object.keys(notes).length === 0) throw new CliError("INVALID_INPUT", "a checkpoint needs at least one note", "Pass --done, --next, --gotchas or --note (and --branch to record another branch).");
  const target = held(flags, positionals);
  const saved = await withMcp(target.binding, (call) => renewing(target, () => call<Renewed>("checkpoint", { identifier: target.identifier, claimToken: target.record.claimToken, ...notes })));
  if (flags.json) return printJson(saved);
  ok(`${target.identifier}: checkpoint recorded; lease renewed until ${until(saved.expiresAt)}.`);
}

/** `retasc release`: gives the issue back unfinished; the note is left for the next claimant. */
export async function release(flags: LeaseFlags & { note?: string }, positionals: string[]) {
  const target = held(flags, positionals);
  const released = await withMcp(target.binding, (call) =>
    call<Released>("release_issue", { identifier: target.identifier, claimToken: target.record.claimToken, ...(flags.note ? { note: flags.note } : {}) }),
  ).catch(async (error: unknown) => {
    if (error instanceof CliError && error.code === "STALE_CLAIM") await forget(target.binding, target.identifier);
    throw error;
  });
  await forget(target.binding, target.identifier);
  if (flags.json) return printJson(released);
  ok(`${target.identifier} released: ${released.message}`);
  if (target.record.worktree && fs.existsSync(target.record.worktree)) say(`  Its worktree stays at ${target.record.worktree} (\`retasc tidy\` removes worktrees of finished issues).`);
}

/** `retasc check-claim`: whether you still hold it; asks the server, needs no token. */
export async function checkClaim(flags: LeaseFlags, positionals: string[]) {
  const binding = requireBinding(process.cwd());
  const identifier = targetOf(flags, positionals, binding);
  const state = await withMcp(binding, (call) => call<CheckedClaim>("check_claim", { identifier }));
  const tokenHere = Boolean(claimsOf(binding)[identifier]);
  // Each command is an MCP session of its own, so the server never says this one holds it; this
  // folder holds it when its key does and the claim's token is in this machine's keystore.
  const youHold = state.youHold || Boolean(state.held && state.yourKey && tokenHere);
  const issueStatus = state.issueStatus ?? state.status;
  if (flags.json) return printJson({ ...state, status: issueStatus, claim: state.status, youHold, tokenHere });
  if (youHold) ok(`You hold ${identifier} (${issueStatus}) until ${state.expiresAt ? until(state.expiresAt) : "?"}.`);
  else if (state.held && state.yourKey) {
    say(`${identifier} (${issueStatus}) is held by another session of this folder's key (${state.holder?.runtime ?? "an agent"}) until ${state.expiresAt ? until(state.expiresAt) : "?"}.`);
    say("  Its token is not on this machine: leave it to that agent, or wait for its lease to end.");
  } else if (state.held) say(`${identifier} (${issueStatus}) is held by ${state.holder?.runtime ?? "someone"}${state.holder?.email ? ` for ${state.holder.email}` : ""} until ${state.expiresAt ? until(state.expiresAt) : "?"}.`);
  else say(`${identifier} (${issueStatus}) is not held by anyone.`);
}

const priorities = ["none", "urgent", "high", "medium", "low"];

/** `retasc issue show <id>`. */
export async function issueShow(flags: LeaseFlags, positionals: string[]) {
  const binding = requireBinding(process.cwd());
  const named = positionals[0] ?? flags.id;
  if (!named) throw new CliError("INVALID_INPUT", "which issue?", `retasc issue show ${binding.workspace?.prefix ?? "PFX"}-42`);
  const identifier = normalizeIdentifier(named, binding.workspace?.prefix);
  const issue = await withMcp(binding, (call) => call<IssueView>("get_issue", { identifier }));
  if (flags.json) return printJson(issue);
  say(`${issue.identifier}  ${issue.title}`);
  say(`  ${issue.statusNote ?? issue.status} · priority ${priorities[issue.priority] ?? issue.priority}${issue.assignee ? ` · for ${issue.assignee.email ?? issue.assignee.name ?? "?"}` : " · unassigned"}${issue.branch ? ` · branch ${issue.branch}` : ""}`);
  if (issue.lease) say(`  held by ${issue.lease.runtime ?? "an agent"} until ${issue.lease.expiresAt ? until(issue.lease.expiresAt) : "?"}`);
  if (issue.openBlockers?.length) say(`  blocked by ${issue.openBlockers.map((b) => (typeof b === "string" ? b : b.identifier)).join(", ")}`);
  if (issue.checkpoint) {
    for (const k of ["done", "next", "gotchas", "note"] as const) if (issue.checkpoint[k]) say(`  ${k}: ${issue.checkpoint[k]}`);
  }
  if (issue.body) say(`\n${issue.body}`);
}

/** What list_issues' slaState takes: where an issue stands against its deadline (none: it has none). */
const slaStates = ["none", "ok", "warning", "breaching", "breached"] as const;

interface ListFlags extends JsonFlags {
  status?: string;
  priority?: string;
  label?: string;
  assignee?: string;
  author?: string;
  sla?: string;
  limit?: string;
}

/** `retasc issue list`: the backlog in dispatch order, filtered as list_issues filters. */
export async function issueList(flags: ListFlags) {
  const binding = requireBinding(process.cwd());
  const args: Record<string, unknown> = {};
  if (flags.status) args.status = flags.status.includes(",") ? flags.status.split(",").map((s) => s.trim()) : flags.status;
  if (flags.priority) args.priority = /^\d$/.test(flags.priority) ? Number(flags.priority) : flags.priority;
  if (flags.label) args.label = flags.label;
  if (flags.assignee) args.assignee = flags.assignee === "none" ? null : flags.assignee;
  if (flags.author) args.author = flags.author;
  if (flags.sla) {
    if (!(slaStates as readonly string[]).includes(flags.sla)) throw new CliError("INVALID_INPUT", `--sla ${flags.sla} is not a deadline state`, `One of ${slaStates.join(", ")}.`);
    args.slaState = flags.sla;
  }
  // --limit caps the whole list; without it, every page to the end.
  let left = flags.limit ? Number(flags.limit) : Infinity;
  const all: IssueLine[] = [];
  const rows = tableWriter(["ISSUE", "STATUS", "PRIORITY", "TITLE"]);
  await withMcp(binding, async (call) => {
    const read = (cursor: string | undefined) =>
      call<{ issues: IssueLine[]; nextCursor?: string }>("list_issues", { ...args, ...(Number.isFinite(left) ? { limit: Math.min(left, 200) } : {}), cursor }).then((r) => ({
        items: r.issues.slice(0, left),
        nextCursor: r.issues.length < left ? r.nextCursor : undefined,
      }));
    for await (const issues of pages(read)) {
      left -= issues.length;
      if (flags.json) all.push(...issues);
      else rows.write(issues.map((i) => [i.identifier, i.status, priorities[i.priority] ?? i.priority, i.title]));
    }
  });
  if (flags.json) return printJson({ issues: all });
  if (!rows.printed) say("No issues match.");
}

/**
 * `retasc tidy`: removes the clean worktrees of issues that are done or canceled; with --prune,
 * their branches too once merged (the base has every commit of them). Unfinished work is kept.
 */
export async function tidy(flags: JsonFlags & { "dry-run"?: boolean; prune?: boolean }) {
  const binding = requireBinding(process.cwd());
  const worktrees = worktreesOf(process.cwd()).filter((w) => w.issue);
  const branches = flags.prune ? issueBranches(process.cwd()) : [];
  const identifiers = [...new Set([...worktrees.map((w) => w.issue!), ...branches.map((b) => issueOfBranch(b)!)])];
  const statusOf = new Map(
    await withMcp(binding, (call) =>
      Promise.all(
        identifiers.map(async (identifier) => {
          const state = await call<CheckedClaim>("check_claim", { identifier }).catch((error: CliError) => ({ status: `unknown (${error.code})` }) as CheckedClaim);
          return [identifier, state.issueStatus ?? state.status] as const;
        }),
      ),
    ),
  );
  const finished = (identifier: string) => ["done", "canceled"].includes(statusOf.get(identifier) ?? "");
  const results = worktrees.map((w) => {
    const identifier = w.issue!;
    const status = statusOf.get(identifier)!;
    if (!finished(identifier)) return { identifier, worktree: w.path, status, removed: false, reason: "the issue is not finished" };
    if (flags["dry-run"]) return { identifier, worktree: w.path, status, removed: false, reason: "--dry-run: would remove it if clean" };
    const removal = removeWorktree(w.path);
    return { identifier, worktree: w.path, status, removed: removal.removed, reason: removal.removed ? null : removal.reason };
  });
  // A branch goes only once no worktree of it is left: a kept worktree holds its branch.
  const kept = new Set(worktrees.filter((_, i) => !results[i]!.removed).map((w) => w.branch));
  const pruned = branches.map((branch) => {
    const identifier = issueOfBranch(branch)!;
    const status = statusOf.get(identifier)!;
    if (!finished(identifier)) return { identifier, branch, status, deleted: false, reason: "the issue is not finished" };
    if (kept.has(branch)) return { identifier, branch, status, deleted: false, reason: "its worktree stays" };
    if (flags["dry-run"]) return { identifier, branch, status, deleted: false, reason: "--dry-run: would delete it if merged" };
    const deletion = pruneBranch(branch, process.cwd());
    return { identifier, branch, status, deleted: deletion.deleted, reason: deletion.deleted ? null : deletion.reason };
  });
  if (!flags["dry-run"]) {
    const done = new Set(identifiers.filter(finished));
    await updateBindings((bindings) => {
      const mine = bindings.claims[keyFingerprint(binding.key)];
      for (const identifier of done) delete mine?.[identifier];
    });
  }
  if (flags.json) return printJson({ dryRun: Boolean(flags["dry-run"]), worktrees: results, ...(flags.prune ? { branches: pruned } : {}) });
  if (results.length === 0 && pruned.length === 0) return say(flags.prune ? "No issue worktrees or branches here." : "No issue worktrees here.");
  for (const r of results) {
    if (r.removed) ok(`Removed ${r.worktree} (${r.identifier} is ${r.status}${flags.prune ? "" : "; its branch stays"}).`);
    else say(`  Kept ${r.worktree} (${r.identifier} is ${r.status}): ${r.reason}.`);
  }
  for (const b of pruned) {
    if (b.deleted) ok(`Deleted branch ${b.branch} (${b.identifier} is ${b.status}, merged).`);
    else say(`  Kept branch ${b.branch} (${b.identifier} is ${b.status}): ${b.reason}.`);
  }
}

/** `retasc unbind`: forgets this folder's key on this machine and revokes it when signed in; the committed files stay. */
export async function unbind(flags: JsonFlags & { "keep-key"?: boolean }) {
  const binding = requireBinding(process.cwd());
  if (!binding.workspace || !binding.workspaceId) {
    throw new CliError("INVALID_INPUT", `the key comes from ${binding.source}, not from this machine's keystore`, "Unset RETASC_MCP_KEY / RETASC_WORKSPACE; there is nothing to unbind here.");
  }
  const workspace = binding.workspace;
  let revoked = false;
  const session = currentSession({ url: workspace.url });
  if (!flags["keep-key"] && session) {
    revoked = await asSession(session, "/keys", { body: { orgId: workspace.orgId, action: "revoke", keyId: workspace.keyId } }).then(
      () => true,
      (error: CliError) => {
        note(`  Could not revoke the key (${error.code}: ${error.message}); revoke it in the Dash or with \`retasc key revoke --key-id ${workspace.keyId}\`.`);
        return false;
      },
    );
  }
  await updateBindings((bindings) => {
    delete bindings.workspaces[binding.workspaceId!];
    delete bindings.claims[keyFingerprint(binding.key)];
  });
  const result = { workspaceId: binding.workspaceId, path: workspace.path, prefix: workspace.prefix, keyId: workspace.keyId, revoked };
  if (flags.json) return printJson(result);
  ok(`Unbound ${workspace.path} from ${workspace.prefix} on this machine.`);
  say(revoked ? "  Its key is revoked." : `  Its key still works until revoked (${flags["keep-key"] ? "--keep-key" : "not signed in"}): \`retasc key revoke --key-id ${workspace.keyId}\`.`);
  say("  .mcp.json and .retasc.json stay: they are the folder's, not this machine's.");
}
