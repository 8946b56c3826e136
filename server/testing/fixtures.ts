import { notifyBindings } from "../../db/schema/index.ts";
import type { Principal, Services } from "../context.ts";
import type { Ctx } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { saveIssue } from "../issues/index.ts";
import { createOrg, createProject, ensureMember, ensureUser, mintAgentKey, authenticateAgentKey } from "../orgs/index.ts";

export interface SeededOrg {
  orgId: string;
  projectId: string;
  prefix: string;
  /** Agents of distinct humans: `alice` is the owner, `bob` and `carol` members. */
  agents: Record<"alice" | "bob" | "carol", { principal: Principal; key: string; userId: string; ctx: Ctx }>;
  /** Another agent (another key, another runtime) acting for alice. */
  agentFor(who: "alice" | "bob" | "carol", runtime: string): Promise<{ principal: Principal; key: string; ctx: Ctx }>;
}

/** Seeds an org with one project and three people, each with an agent key. */
export async function seedOrg(services: Services, options: { prefix?: string; name?: string } = {}): Promise<SeededOrg> {
  const prefix = options.prefix ?? "RTSC";
  const tag = Math.random().toString(36).slice(2, 8);
  const { db } = services;
  const ids = await db.transaction(async (tx) => {
    const alice = await ensureUser(tx, `alice-${tag}@example.com`, "Alice");
    const bob = await ensureUser(tx, `bob-${tag}@example.com`, "Bob");
    const carol = await ensureUser(tx, `carol-${tag}@example.com`, "Carol");
    const orgId = await createOrg(services, tx, { name: options.name ?? `Org ${tag}`, ownerUserId: alice });
    await ensureMember(tx, orgId, bob);
    await ensureMember(tx, orgId, carol);
    const project = await createProject(tx, { orgId, name: "Main", prefix });
    return { orgId, projectId: project.id, users: { alice, bob, carol } };
  });
  const makeAgent = async (who: "alice" | "bob" | "carol", runtime: string) => {
    const { key } = await mintAgentKey(db, { orgId: ids.orgId, userId: ids.users[who], projectId: ids.projectId, runtime });
    const principal = (await authenticateAgentKey(db, key))!;
    return { principal, key, userId: ids.users[who], ctx: withPrincipal(services, principal) };
  };
  return {
    orgId: ids.orgId,
    projectId: ids.projectId,
    prefix,
    agents: {
      alice: await makeAgent("alice", "claude-code"),
      bob: await makeAgent("bob", "codex"),
      carol: await makeAgent("carol", "cursor"),
    },
    agentFor: makeAgent,
  };
}

/** `count` work issues titled `label 0`, `label 1`, …, filed at once by `author`: their identifiers. */
export function fileIssues(author: Ctx, label: string, count: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) =>
      (await saveIssue(author, { title: `${label} ${i}`, work: true, changeType: "feat", priority: i % 5, noDependency: "independent" })).identifier,
    ),
  );
}

/** An active notification channel for a member (its address is not read before a send), so their issue events are written. */
export async function bindChannel(services: Services, orgId: string, userId: string): Promise<void> {
  await services.db.insert(notifyBindings).values({ id: crypto.randomUUID(), orgId, userId, channel: "email", addressEnc: "unread", status: "active" });
}
