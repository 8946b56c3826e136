import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import type { Ctx } from "../context.ts";
import { saveIssue } from "../issues/index.ts";
import { and, eq } from "drizzle-orm";
import { members } from "../../db/schema/index.ts";
import { humanCtx } from "../orgs/access.ts";
import { createProject } from "../orgs/index.ts";
import { seedOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { layoutGraph, NODE_H, NODE_W } from "./graph-layout.ts";
import { issueDetail } from "./issue.ts";

const env = useTestServices();

type Box = { x: number; y: number };
function overlapping(nodes: Record<string, Box>): string[] {
  const list = Object.entries(nodes);
  const found: string[] = [];
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) {
      const [a, p] = list[i]!;
      const [b, q] = list[j]!;
      if (Math.abs(p.x - q.x) < NODE_W && Math.abs(p.y - q.y) < NODE_H) found.push(`${a}/${b}`);
    }
  }
  return found;
}

describe("the dependency graph's layout", () => {
  it("lays out a container of 200 issues with no two nodes overlapping, inside its box, and marks its longest open chain", async () => {
    const org = await seedOrg(env.services, { prefix: "BIG" });
    const a: Ctx = org.agents.alice.ctx;
    const container = await saveIssue(a, { title: "the release", work: false, changeType: "feat", noDependency: "standalone" }); // BIG-1
    const made: string[] = [];
    const add = async (blockedBy?: string) => {
      const issue = await saveIssue(a, {
        title: `part ${made.length}`,
        work: true,
        changeType: "feat",
        parent: container.identifier,
        ...(blockedBy ? { blockedBy: [blockedBy] } : { noDependency: "standalone" }),
      });
      made.push(issue.identifier);
      return issue.identifier;
    };
    // A chain of 20, 50 pairs, and 80 standalone issues: 200 in all.
    const chain = [await add()];
    for (let i = 1; i < 20; i++) chain.push(await add(chain[i - 1]));
    for (let i = 0; i < 50; i++) await add(await add());
    for (let i = 0; i < 80; i++) await add();
    expect(made).toHaveLength(200);

    const dash = (await humanCtx(env.services, { orgId: org.orgId, userId: org.agents.alice.userId, runtime: "dash" })).ctx;
    const { graph } = await issueDetail(dash, { identifier: container.identifier });
    expect(graph.container).toBe(true);
    expect(graph.nodes).toHaveLength(201);
    expect(graph.edges).toHaveLength(19 + 50);
    const { layout } = graph;
    expect(Object.keys(layout.nodes).sort()).toEqual(graph.nodes.map((n) => n.identifier).sort());
    expect(overlapping(layout.nodes)).toEqual([]);
    for (const p of Object.values(layout.nodes)) {
      expect(p.x).toBeGreaterThanOrEqual(0);
      expect(p.y).toBeGreaterThanOrEqual(0);
      expect(p.x + NODE_W).toBeLessThanOrEqual(layout.width);
      expect(p.y + NODE_H).toBeLessThanOrEqual(layout.height);
    }
    for (const e of graph.edges) {
      expect(layout.edges[`${e.from}>${e.to}`]).toMatch(/^M[\d.]+,[\d.]+( L[\d.]+,[\d.]+)+$/);
      expect(layout.nodes[e.from]!.y).toBeLessThan(layout.nodes[e.to]!.y);
    }
    const critical = graph.edges.filter((e) => e.critical).map((e) => `${e.from}>${e.to}`);
    expect(critical.sort()).toEqual(chain.slice(1).map((id, i) => `${chain[i]}>${id}`).sort());
    expect(graph.nodes.filter((n) => n.critical).map((n) => n.identifier).sort()).toEqual([container.identifier, ...chain].sort());

    // The layout of those 200 alone, timed (the page waits for it): printed, and bounded generously for a loaded machine.
    const ids = graph.nodes.map((n) => n.identifier);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      layoutGraph(ids, graph.edges);
      times.push(performance.now() - started);
    }
    times.sort((x, y) => x - y);
    console.log(`dagre layout of ${ids.length} nodes, ${graph.edges.length} edges: median ${times[2]!.toFixed(1)} ms`);
    expect(times[2]).toBeLessThan(1_000);
  }, 180_000);

  it("sets unconnected issues in a grid and an empty picture to its margins", () => {
    const grid = layoutGraph(["A-1", "A-2", "A-3", "A-4", "A-5", "A-6"], []);
    expect(overlapping(grid.nodes)).toEqual([]);
    expect(new Set(Object.values(grid.nodes).map((p) => p.y)).size).toBe(2); // four a row
    const mixed = layoutGraph(["A-1", "A-2", "A-3"], [{ from: "A-1", to: "A-2" }]);
    expect(mixed.nodes["A-3"]!.y).toBeGreaterThan(mixed.nodes["A-2"]!.y); // under the laid-out part
    expect(overlapping(mixed.nodes)).toEqual([]);
  });
});

describe("the dependency graph within a member's projects (decision 050)", () => {
  it("walks no further than the viewer reaches: an out-of-scope blocker hides what lies beyond it, and nothing of it is counted", async () => {
    const org = await seedOrg(env.services, { prefix: "GSC" });
    const ops = await createProject(env.services.db, { orgId: org.orgId, name: "Ops", prefix: "GSO" });
    await env.services.db
      .update(members)
      .set({ projectIds: [org.projectId] })
      .where(and(eq(members.orgId, org.orgId), eq(members.userId, org.agents.carol.userId)));
    const a = org.agents.alice.ctx;
    const beyond = await saveIssue(a, { title: "seen, beyond the hidden one", work: true, changeType: "feat", noDependency: "standalone" });
    const hidden = await saveIssue(a, { title: "ops work", work: true, changeType: "feat", project: ops.prefix, blockedBy: [beyond.identifier] });
    const near = await saveIssue(a, { title: "seen, next to it", work: true, changeType: "feat", noDependency: "standalone" });
    const center = await saveIssue(a, { title: "the center", work: true, changeType: "feat", blockedBy: [hidden.identifier, near.identifier] });

    const graphOf = async (who: "alice" | "carol") =>
      (await issueDetail((await humanCtx(env.services, { orgId: org.orgId, userId: org.agents[who].userId, runtime: "dash" })).ctx, { identifier: center.identifier })).graph;
    const all = await graphOf("alice");
    expect(all.nodes.map((n) => n.identifier).sort()).toEqual([beyond, hidden, near, center].map((i) => i.identifier).sort());
    const scoped = await graphOf("carol");
    expect(scoped.nodes.map((n) => n.identifier).sort()).toEqual([near, center].map((i) => i.identifier).sort());
    expect(scoped.edges).toEqual([expect.objectContaining({ from: near.identifier, to: center.identifier })]);
    expect(scoped.hidden).toBe(0);
  });
});
