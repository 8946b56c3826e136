import { type Command, command, url, json, issueId, workFlags } from "../command.ts";
import { checkClaim, checkpoint, heartbeat, issueList, issueShow, release, tidy, unbind } from "./lease.ts";
import { claim, done, next } from "./work.ts";

/** The command table's part for an agent's work on an issue: next, claim, done, the lease (heartbeat, checkpoint, release, check-claim), reading issues, tidy, unbind. */
export const workCommands: Record<string, Command> = {
  next: command({
    summary: "claim whatever dispatch hands you, and open its worktree",
    usage: "retasc next [--all-lanes] [--wait] [--no-worktree] [--base <ref>] [--dir <path>] [--print-path] [--json]",
    options: workFlags,
    run: next,
  }),
  claim: command({
    summary: "claim an issue over MCP and create its git worktree on the server's branch",
    usage: "retasc claim [PFX-42 | 42] [--wait] [--no-worktree] [--base <ref>] [--dir <path>] [--print-path] [--json]",
    positionals: "[issue]",
    options: { id: { type: "string", value: "<issue>", description: "the issue (same as the positional)" }, ...workFlags },
    details: "Without an issue it claims the top of your queue, like `retasc next`. The claim is a lease: `retasc heartbeat` or `retasc checkpoint` renews it.",
    run: claim,
  }),
  done: command({
    summary: "finish the issue you hold, and remove the worktree its claim opened",
    usage: "retasc done [--id <PFX-42>] [--pr <number|url>] [--keep-worktree] [--force] [--dry-run] [--json]",
    options: {
      id: issueId,
      pr: { type: "string", value: "<number|url>", description: "the pull/merge request to send as evidence (else the branch's open one is looked up)" },
      "keep-worktree": { type: "boolean", description: "leave the worktree where it is" },
      force: { type: "boolean", description: "finish even with uncommitted changes or no commits on the branch" },
      "dry-run": { type: "boolean", description: "say what it would do, change nothing" },
      json,
      url,
    },
    details:
      "Sends the worktree's HEAD commit and branch as the finish's evidence (a project with verification on needs them; CI then verifies before dependents start), with the branch's open pull/merge request: --pr, else the one the server finds through the project's GitHub or GitLab connector, else (no connector) the one GITHUB_TOKEN/GH_TOKEN or GITLAB_TOKEN finds for the `origin` remote; a line says what was found, or why none was. Refuses (UNFINISHED_WORK) while the issue's worktree has uncommitted changes (changed, staged or untracked files) or its branch has no commits of its own, unless --force. Finishes over MCP with the token of your claim, then removes the worktree `retasc claim` created; the branch stays. A worktree with uncommitted changes (with --force) is kept, and a note on stderr says so. --json adds requestLookup (the lookup's line, when one was made), worktree, worktreeRemoved and, when kept, worktreeKept (why).",
    run: done,
  }),
  heartbeat: command({
    summary: "renew the lease of the issue you hold (or --all of them)",
    usage: "retasc heartbeat [<PFX-42>] [--all] [--json]",
    positionals: "[issue]",
    options: { id: issueId, all: { type: "boolean", description: "every claim this folder's key holds from this machine" }, json, url },
    details: "Only heartbeat and checkpoint renew a lease. `retasc mcp proxy` heartbeats an agent's claims for it while the agent runs.",
    run: heartbeat,
  }),
  checkpoint: command({
    summary: "record handoff notes on the issue you hold, renewing its lease",
    usage: "retasc checkpoint [<PFX-42>] [--done <text>] [--next <text>] [--gotchas <text>] [--note <text>] [--branch <name>] [--json]",
    positionals: "[issue]",
    options: {
      id: issueId,
      done: { type: "string", value: "<text>", description: "what is finished so far" },
      next: { type: "string", value: "<text>", description: "what the next agent should do" },
      gotchas: { type: "string", value: "<text>", description: "traps and surprises" },
      note: { type: "string", value: "<text>", description: "anything else" },
      branch: { type: "string", value: "<name>", description: "the branch the work is on, if not the claim's" },
      json,
      url,
    },
    details: "The latest checkpoint survives release and reclaim: the next claimant resumes from it.",
    run: checkpoint,
  }),
  release: command({
    summary: "give the issue you hold back unfinished (the note is kept for the next claimant)",
    usage: "retasc release [<PFX-42>] [--note <text>] [--json]",
    positionals: "[issue]",
    options: { id: issueId, note: { type: "string", value: "<text>", description: "left as a checkpoint note" }, json, url },
    run: release,
  }),
  "check-claim": command({
    summary: "whether you still hold an issue, who does, and until when",
    usage: "retasc check-claim [<PFX-42>] [--json]",
    positionals: "[issue]",
    options: { id: issueId, json, url },
    run: checkClaim,
  }),
  "issue show": command({
    summary: "an issue: status, lane, lease, checkpoint and body",
    usage: "retasc issue show <PFX-42> [--json]",
    positionals: "<issue>",
    options: { id: issueId, json, url },
    run: issueShow,
  }),
  "issue list": command({
    summary: "issues in dispatch order, most urgent first",
    usage: "retasc issue list [--status <s[,s]>] [--priority <p>] [--label <name>] [--assignee <email|me|none>] [--author <email|me>] [--sla <state>] [--limit <n>] [--json]",
    options: {
      status: { type: "string", value: "<s[,s]>", description: "todo, doing, blocked, review, done, canceled, or the groups open (default) and active" },
      priority: { type: "string", value: "<p>", description: "urgent, high, medium, low, none (or 1-4, 0)" },
      label: { type: "string", value: "<name>", description: "issues with this label" },
      assignee: { type: "string", value: "<who>", description: "a member's email, me, or none (unassigned)" },
      author: { type: "string", value: "<who>", description: "issues filed by this member (their email) or by you and your agents (me)" },
      sla: { type: "string", value: "<state>", description: "by deadline: none (no deadline), ok, warning (75% of its window gone), breaching (90%) or breached (past due)" },
      limit: { type: "string", value: "<n>", description: "at most this many in all (default: every one, read a page at a time)" },
      json,
      url,
    },
    run: issueList,
  }),
  tidy: command({
    summary: "remove the clean worktrees of issues that are done or canceled; with --prune their merged branches too",
    usage: "retasc tidy [--prune] [--dry-run] [--json]",
    options: {
      prune: { type: "boolean", description: "also delete the branches of done or canceled issues that their base (origin/main, else main) has merged" },
      "dry-run": { type: "boolean", description: "list what it would remove, remove nothing" },
      json,
      url,
    },
    details:
      "Looks at every worktree of this repository on an issue branch (pfx-42/…); one with uncommitted changes is kept, with the reason. " +
      "Without --prune the branches stay; with it, each issue branch (with a worktree or without) of a finished issue is deleted once merged, and one with commits its base lacks is kept, with the count.",
    run: tidy,
  }),
  unbind: command({
    summary: "forget this folder's key on this machine, revoking it when signed in",
    usage: "retasc unbind [--keep-key] [--json]",
    options: { "keep-key": { type: "boolean", description: "leave the key working (only forget it here)" }, json, url },
    details: ".mcp.json and .retasc.json stay: they belong to the folder (and its teammates), not to this machine.",
    run: unbind,
  }),
};
