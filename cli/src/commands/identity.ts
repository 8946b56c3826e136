import { CliError } from "../errors.ts";
import { note, ok, printJson, say } from "../output.ts";
import { ask, requireTerminal } from "../prompt.ts";
import { asSession, requireSession } from "../session.ts";
import { visible } from "./triage.ts";
import { orgIdOf, type OrgFlags } from "./manage.ts";

/**
 * `retasc identity`: the placeholders an import left that carry the signed-in person's verified
 * email, through /api/cli/identity (the functions list_claimable_ghosts, claim_ghost and
 * dismiss_ghost_prompt call). Claiming moves someone's history onto this account for good, so it
 * runs only at a terminal, a person picks one and types `me`; no flag answers for them.
 */
interface Claimable {
  verified: boolean;
  ghosts: { ghostId: string; name: string; source: string; importedAt: string; dismissed: boolean }[];
}

export async function identity(flags: OrgFlags) {
  requireTerminal("identity", "taking an imported person's history as yours cannot be undone, so no flag answers it. The Dash's Team page does it too.");
  const session = requireSession(flags);
  const orgId = await orgIdOf(flags, session);
  const result: { claimed: string[]; dismissed: string[] } = { claimed: [], dismissed: [] };
  const done = () => (flags.json ? printJson(result) : undefined);
  const { verified, ghosts } = await asSession<Claimable>(session, "/identity", { query: { orgId } });
  if (!verified) {
    say("Your email is not verified on this server, so no imported person can be you yet. Verify it, then run retasc identity again.");
    return done();
  }
  if (ghosts.length === 0) {
    say("No imported person in this org carries your email: there is nothing to claim.");
    return done();
  }
  say("People an import brought in with your email:");
  ghosts.forEach((g, i) => say(`  ${i + 1}) ${visible(g.name)}  from ${g.source}, imported ${g.importedAt.slice(0, 10)}${g.dismissed ? "  (you said before it is not you)" : ""}`));
  const answer = await ask('Which one is you? (a number; "none" if none is; Enter to decide later) ');
  if (!answer) return done();
  if (answer === "none") {
    const dismissed = await asSession<{ dismissed: string[] }>(session, "/identity", { body: { orgId, action: "dismiss" } });
    result.dismissed = dismissed.dismissed;
    say("They are not offered again; a later import's people will be.");
    return done();
  }
  const picked = ghosts[Number(answer) - 1];
  if (!Number.isInteger(Number(answer)) || !picked) throw new CliError("INVALID_INPUT", `${answer} is not one of 1 to ${ghosts.length}`, "Run retasc identity again.");
  note(`${visible(picked.name)}'s issues (filed and assigned), comments, attachments and activity become yours. This cannot be undone.`);
  if ((await ask('Type "me" to claim them: ')) !== "me") {
    say("Nothing claimed.");
    return done();
  }
  await asSession(session, "/identity", { body: { orgId, action: "claim", ghostId: picked.ghostId } });
  result.claimed.push(picked.ghostId);
  ok(`${visible(picked.name)}'s history is yours now.`);
  return done();
}
