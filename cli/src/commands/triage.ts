import { CliError } from "../errors.ts";
import { note, ok, printJson, say } from "../output.ts";
import { ask, requireTerminal } from "../prompt.ts";
import { asSession, requireSession } from "../session.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc triage`: outsiders' work waiting for a person, through /api/cli/triage
 * (app/routes/api.cli.triage.ts, server/intake/triage.ts). Interactive only, and there is no
 * flag that accepts: the person picks an item, reads its whole text here, and types the word
 * that lets exactly that text in (the request carries the SHA-256 of what was shown, so text
 * changed meanwhile is refused). Outside text is printed with its control characters made
 * visible, so no escape sequence can hide or rewrite what the person reads.
 */

interface HeldIssue {
  kind: "issue";
  identifier: string;
  source: string | null;
  author: string | null;
  reason: "filed" | "edited";
  title: string;
  body: string;
  digest: string;
}
interface HeldComment {
  kind: "comment";
  id: string;
  identifier: string;
  author: string;
  body: string;
  digest: string;
}
interface TriageList {
  issues: HeldIssue[];
  comments: HeldComment[];
  more: boolean;
}

/** Control characters (escape sequences, carriage returns, bidi overrides) shown as visible escapes; line breaks and tabs kept. */
export function visible(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

const oneLine = (text: string, max = 70) => {
  const line = visible(text).replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

function show(item: HeldIssue | HeldComment): void {
  const rule = "─".repeat(60);
  if (item.kind === "issue") {
    say(`${item.identifier} ${item.reason === "edited" ? "changed at the source after it was accepted" : "filed from outside the team"}${item.source ? `, ${item.source}` : ""}${item.author ? ` by @${visible(item.author)}` : ""}`);
    say(`Title:\n${rule}\n${visible(item.title)}\n${rule}`);
    say(`Body:\n${rule}\n${visible(item.body) || "(empty)"}\n${rule}`);
  } else {
    say(`A comment held on ${item.identifier}, by @${visible(item.author)}:`);
    say(`${rule}\n${visible(item.body)}\n${rule}`);
  }
}

/** `retasc triage [issue]`: everything waiting, or only what of one issue waits (its text, its held comments). */
export async function triage(flags: OrgFlags, positionals: string[]) {
  requireTerminal("triage", "outside work is let in only by a person who read it there or on the Dash. There is no flag that accepts.");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  // With --json the conversation goes to stderr and stdout gets what was let in, once the person stops.
  const decided: { kind: "issue" | "comment"; identifier: string; id?: string; sha256: string }[] = [];
  const done = () => (flags.json ? printJson({ decided }) : undefined);
  const wanted = positionals[0]?.trim().toUpperCase();
  for (let round = 0; ; round++) {
    const list = await asSession<TriageList>(session, "/triage", { query: { orgId } });
    const items: (HeldIssue | HeldComment)[] = [...list.issues, ...list.comments].filter((item) => !wanted || item.identifier === wanted);
    if (items.length === 0) {
      if (wanted && round === 0) throw new CliError("NOT_FOUND", `nothing of ${wanted} waits for a person`, "Run `retasc triage` for everything that does.");
      say(wanted ? `Nothing more of ${wanted} is waiting.` : "Nothing from outside the team is waiting.");
      return done();
    }
    // One issue named with one thing waiting: straight to its text.
    const only = wanted && items.length === 1 ? items[0]! : null;
    const picked = only ?? (await pick(items, list.more));
    if (!picked) return done();
    show(picked);
    const word = picked.kind === "issue" ? "accept" : "release";
    const typed = await ask(`Type "${word}" to let exactly this text in for agents (anything else leaves it waiting): `);
    if (typed !== word) {
      say(`Left ${picked.identifier} waiting.`);
      if (only) return done();
      continue;
    }
    if (picked.kind === "issue") {
      await asSession(session, "/triage", { body: { orgId, action: "accept", identifier: picked.identifier, digest: picked.digest } });
      ok(`Accepted ${picked.identifier}: agents can be handed it now.`);
      decided.push({ kind: "issue", identifier: picked.identifier, sha256: picked.digest });
    } else {
      await asSession(session, "/triage", { body: { orgId, action: "release", comment: picked.id, digest: picked.digest } });
      ok(`Released the comment on ${picked.identifier}: agents read it from now on.`);
      decided.push({ kind: "comment", identifier: picked.identifier, id: picked.id, sha256: picked.digest });
    }
  }
}

/** Lists what waits and asks which one to read: null when the person stops (Enter). */
async function pick(items: (HeldIssue | HeldComment)[], more: boolean): Promise<HeldIssue | HeldComment | null> {
  for (;;) {
    say("Waiting for a person:");
    items.forEach((item, i) =>
      say(
        item.kind === "issue"
          ? `  ${i + 1}) ${item.identifier}  ${item.reason === "edited" ? "edited" : "issue"}  ${oneLine(item.title)}`
          : `  ${i + 1}) ${item.identifier}  comment by @${oneLine(item.author, 30)}  ${oneLine(item.body, 50)}`,
      ),
    );
    if (more) note("  (more are waiting: decide on these first)");
    const answer = await ask("Read which one? (a number; Enter to stop) ");
    if (!answer) return null;
    const picked = items[Number(answer) - 1];
    if (Number.isInteger(Number(answer)) && picked) return picked;
    note(`Type a number from 1 to ${items.length}.`);
  }
}
