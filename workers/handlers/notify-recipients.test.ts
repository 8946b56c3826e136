import { beforeAll, describe, expect, it } from "vitest";
import { saveIssue } from "../../server/issues/index.ts";
import { checkpoint, claimIssue, reclaimSweep } from "../../server/queue/index.ts";
import { notifyWorld } from "../testing/notify-world.ts";

/**
 * Who hears of what, end to end through the outbox: issues move through the service core, the
 * in-process runner delivers, and the local fake Telegram, Slack, Discord and SMTP server say
 * what reached whom, with each platform's escaping.
 */
// w: the file's fakes, database and org (workers/testing/notify-world.ts).
const w = notifyWorld();
const { clock, emails, as, bindEveryone, heardEverywhere, heardNothing, settled } = w;
beforeAll(() => bindEveryone());

describe("who hears what, on every channel", () => {
  it("done → the author, not the actor; escaped for each platform, linked to the Dash", async () => {
    const issue = await saveIssue(w.org.agents.alice.ctx, { title: "Fix <b>login</b> & @channel *now*", work: true, changeType: "feat", noDependency: "none" });
    const claim = await claimIssue(w.org.agents.bob.ctx, { identifier: issue.identifier });
    await saveIssue(w.org.agents.bob.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    const got = await heardEverywhere("alice", issue.identifier);
    const url = `https://retasc.example.com/dash/issues/${issue.identifier}`;
    expect(got.telegram).toContain(`<b>${issue.identifier} · Fix &lt;b&gt;login&lt;/b&gt; &amp; @channel *now*</b> was marked done.`);
    expect(got.telegram).toContain(`<a href="${url}">`);
    expect(got.slack).toContain(`*${issue.identifier} · Fix &lt;b&gt;login&lt;/b&gt; &amp; @channel *now** was marked done.`);
    expect(got.slack).toContain(`<${url}|Open in Retasc>`);
    expect(got.discord).toContain(`**${issue.identifier} · Fix \\<b\\>login\\</b\\> & \\@channel \\*now\\*** was marked done.`);
    expect(got.discord).toContain(`<${url}>`);
    expect(got.email).toContain(`${issue.identifier} · Fix <b>login</b> & @channel *now* was marked done.`);
    expect(got.email).toContain(url);
    await settled();
    heardNothing("bob", issue.identifier);
    heardNothing("carol", issue.identifier);
  });

  it("a person is never told of their own action", async () => {
    const issue = await saveIssue(w.org.agents.alice.ctx, { title: "Own work", work: true, changeType: "feat", noDependency: "none" });
    const claim = await claimIssue(w.org.agents.alice.ctx, { identifier: issue.identifier });
    await saveIssue(w.org.agents.alice.ctx, { identifier: issue.identifier, status: "done", claimToken: claim.claimToken });
    await settled();
    for (const who of ["alice", "bob", "carol"] as const) heardNothing(who, issue.identifier);
  });

  it("canceled → the author, with the reason", async () => {
    const issue = await saveIssue(w.org.agents.alice.ctx, { title: "Maybe later", work: true, changeType: "feat", noDependency: "none" });
    await saveIssue(as.bob, { identifier: issue.identifier, status: "canceled", cancelReason: "Superseded by <NTF-99>" });
    const got = await heardEverywhere("alice", issue.identifier);
    expect(got.telegram).toContain("was canceled.");
    expect(got.telegram).toContain("<b>Reason:</b> Superseded by &lt;NTF-99&gt;");
    expect(got.slack).toContain("*Reason:* Superseded by &lt;NTF-99&gt;");
    expect(got.discord).toContain("**Reason:** Superseded by \\<NTF-99\\>");
    expect(got.email).toContain("Reason: Superseded by <NTF-99>");
    await settled();
    heardNothing("bob", issue.identifier);
  });

  it("review → the reviewer, with the last checkpoint", async () => {
    const issue = await saveIssue(w.org.agents.alice.ctx, { title: "Needs eyes", work: true, changeType: "feat", noDependency: "none" });
    const claim = await claimIssue(w.org.agents.carol.ctx, { identifier: issue.identifier });
    await checkpoint(w.org.agents.carol.ctx, { identifier: issue.identifier, claimToken: claim.claimToken, done: "wrote the parser", next: "review the edge cases", gotchas: "dates are UTC" });
    await saveIssue(w.org.agents.carol.ctx, { identifier: issue.identifier, status: "review", assignee: emails.bob, claimToken: claim.claimToken });
    const got = await heardEverywhere("bob", issue.identifier);
    expect(w.smtp.mailsTo(emails.bob).find((m) => m.subject.includes(issue.identifier))!.subject).toBe(`${issue.identifier} · Needs eyes is waiting for your review.`);
    for (const text of Object.values(got)) {
      expect(text).toMatch(/Done:\**(<\/b>)? wrote the parser/);
      expect(text).toMatch(/Next:\**(<\/b>)? review the edge cases/);
      expect(text).toMatch(/Gotchas:\**(<\/b>)? dates are UTC/);
    }
    await settled();
    heardNothing("carol", issue.identifier);
    heardNothing("alice", issue.identifier);
  });

  it("assigned → the assignee, with the urgency and deadline", async () => {
    const due = new Date(clock.now().getTime() + 2 * 86_400_000).toISOString();
    const issue = await saveIssue(w.org.agents.alice.ctx, { title: "Urgent thing", work: true, changeType: "feat", noDependency: "none", priority: "urgent", dueAt: due });
    await saveIssue(w.org.agents.alice.ctx, { identifier: issue.identifier, assignee: emails.bob });
    const got = await heardEverywhere("bob", issue.identifier);
    expect(got.email).toContain("Urgency: urgent");
    expect(got.email).toContain(`Deadline: ${due.replace(/\.\d{3}Z$/, "Z")}`);
    expect(got.telegram).toContain("<b>Urgency:</b> urgent");
    await settled();
    heardNothing("alice", issue.identifier);
  });

  it("a lapsed lease → the person whose agent held it", async () => {
    const issue = await saveIssue(w.org.agents.alice.ctx, { title: "Abandoned", work: true, changeType: "feat", noDependency: "none" });
    await claimIssue(w.org.agents.carol.ctx, { identifier: issue.identifier });
    clock.advance(w.services.config.leaseTtlMs + 60_000);
    expect((await reclaimSweep(w.services)).reclaimed).toBeGreaterThanOrEqual(1);
    const got = await heardEverywhere("carol", issue.identifier);
    expect(got.telegram).toContain("was reclaimed");
    await settled();
    heardNothing("alice", issue.identifier);
  });
});
