import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import type { Ctx } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { addRelation, saveIssue } from "../issues/index.ts";
import { saveComment } from "../issues/comments.ts";
import { saveLabel } from "../issues/labels.ts";
import { authenticateAgentKey } from "../orgs/index.ts";
import { addProject } from "../orgs/account.ts";
import { humanCtx } from "../orgs/access.ts";
import { setOrgFrozen } from "../orgs/freeze.ts";
import { refusal } from "../orgs/testing.ts";
import { TestClock } from "../testing/db.ts";
import { useTestServices } from "../testing/database.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { checkpoint, claimIssue, heartbeat, reclaimSweep, releaseIssue } from "./index.ts";

/**
 * A frozen org at the data layer, on both drivers (decision 110): every principal loader reads the
 * freeze with what it already reads (the key, a person's membership), the write functions refuse
 * a frozen principal with ORG_FROZEN before writing, and the sweeps pass a frozen org by. The
 * doors over HTTP are server/orgs/freeze-by-door.test.ts.
 */
const clock = new TestClock();
const env = useTestServices({ clock });

/** Every row of the org's issues, leases, activity and labels, as text: what a refused write must leave as it was. */
async function orgRows(ctx: Ctx): Promise<string[]> {
  const rows = await query<{ t: string }>(
    ctx.db,
    sql`select t::text as t from (
          select 'issue ' || i::text as t from issues i where org_id = ${ctx.principal.orgId}
          union all select 'lease ' || l::text from leases l where org_id = ${ctx.principal.orgId}
          union all select 'activity ' || a::text from activity a where org_id = ${ctx.principal.orgId}
          union all select 'comment ' || c::text from comments c where org_id = ${ctx.principal.orgId}
          union all select 'label ' || b::text from labels b where org_id = ${ctx.principal.orgId}
          union all select 'project ' || p::text from projects p where org_id = ${ctx.principal.orgId}) x order by 1`,
  );
  return rows.map((r) => r.t);
}

describe("a frozen org (decision 110)", () => {
  it("is read with the key and with a person's membership, in the statements they already send", async () => {
    const { services } = env;
    const org = await seedOrg(services, { prefix: "FZA" });
    const alice = org.agents.alice;
    await setOrgFrozen(services.db, org.orgId, true);
    expect((await authenticateAgentKey(services.db, alice.key))?.orgFrozen).toBe(true);
    expect((await humanCtx(services, { orgId: org.orgId, userId: alice.userId, runtime: "cli" })).ctx.principal.orgFrozen).toBe(true);
    await setOrgFrozen(services.db, org.orgId, false);
    expect((await authenticateAgentKey(services.db, alice.key))?.orgFrozen).toBe(false);
    expect((await humanCtx(services, { orgId: org.orgId, userId: alice.userId, runtime: "cli" })).ctx.principal.orgFrozen).toBeFalsy();
  });

  it("refuses every write of its agents and people, writing nothing; its lapsed leases wait for the move; unfrozen, all of it goes through", async () => {
    const { services } = env;
    const org = await seedOrg(services, { prefix: "FZB" });
    const agent = org.agents.alice.ctx;
    const held = (await saveIssue(agent, { title: "held", work: true, changeType: "feat", noDependency: "alone" })).identifier;
    const open = (await saveIssue(agent, { title: "open", work: true, changeType: "feat", noDependency: "alone" })).identifier;
    const { claimToken } = await claimIssue(agent, { identifier: held });
    const lapsing = (await saveIssue(agent, { title: "lapsing", work: true, changeType: "feat", noDependency: "alone" })).identifier;
    await claimIssue(org.agents.bob.ctx, { identifier: lapsing });

    await setOrgFrozen(services.db, org.orgId, true);
    const frozenAgent = withPrincipal(services, (await authenticateAgentKey(services.db, org.agents.alice.key))!);
    const frozenPerson = (await humanCtx(services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
    const writes: [string, (ctx: Ctx) => Promise<unknown>][] = [
      ["claim", (ctx) => claimIssue(ctx, { identifier: open })],
      ["create", (ctx) => saveIssue(ctx, { title: "frozen", work: true, changeType: "feat", noDependency: "alone" })],
      ["comment", (ctx) => saveComment(ctx, { issue: open, body: "frozen" })],
      ["relation", (ctx) => addRelation(ctx, { sourceId: open, targetId: held, type: "related" })],
      ["label", (ctx) => saveLabel(ctx, { name: "frozen" })],
      ["project", (ctx) => addProject(ctx, { name: "Frozen", prefix: "FZC" })],
    ];
    const agentOnly: [string, (ctx: Ctx) => Promise<unknown>][] = [
      ["heartbeat", (ctx) => heartbeat(ctx, { identifier: held, claimToken })],
      ["checkpoint", (ctx) => checkpoint(ctx, { identifier: held, claimToken, done: "half" })],
      ["release", (ctx) => releaseIssue(ctx, { identifier: held, claimToken })],
    ];
    const before = await orgRows(agent);
    for (const [name, write] of [...writes, ...agentOnly]) expect([name, (await refusal(write(frozenAgent))).code]).toEqual([name, "ORG_FROZEN"]);
    for (const [name, write] of writes) expect([name, (await refusal(write(frozenPerson))).code]).toEqual([name, "ORG_FROZEN"]);
    // Both leases lapse during the freeze: the reclaim sweep leaves them for the stack the org moves to.
    clock.advance(services.config.leaseTtlMs + 1);
    await reclaimSweep(services);
    expect(await orgRows(agent)).toEqual(before);

    await setOrgFrozen(services.db, org.orgId, false);
    const live = withPrincipal(services, (await authenticateAgentKey(services.db, org.agents.alice.key))!);
    await reclaimSweep(services);
    expect((await query<{ n: number }>(services.db, sql`select count(*)::int as n from activity where org_id = ${org.orgId} and kind = 'reclaimed'`))[0]!.n).toBe(2);
    const again = await claimIssue(live, { identifier: held });
    for (const [, write] of writes) await write(live);
    await heartbeat(live, { identifier: held, claimToken: again.claimToken });
    await checkpoint(live, { identifier: held, claimToken: again.claimToken, done: "half" });
    await releaseIssue(live, { identifier: held, claimToken: again.claimToken });
  });
});
