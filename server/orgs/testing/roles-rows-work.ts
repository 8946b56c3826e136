import fs from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { githubDelivery } from "../../../test/fakes/github.ts";
import { waitFor } from "../../testing/wait.ts";
import { agentDoors, call, doorsOf, everyone, managers, mcp, OK, type RolesWorld, type Row } from "./roles-doors.ts";

/**
 * The rows of projects, connectors, notifications and the work itself (issue 37, decision 043):
 * a stuck claim, an outsider's issue in triage, a quarantined issue, imports through /mcp and
 * session keys. They close the roles table of docs/security.md.
 */

const examples = JSON.parse(fs.readFileSync(path.resolve("node_modules/@octokit/webhooks-examples/api.github.com/index.json"), "utf8")) as { name: string; examples: Record<string, any>[] }[];

export function projectsAndWorkRows(w: RolesWorld): Row[] {
  const { dash, cli, cliGet, asOwner } = doorsOf(w);
  const { people, actors, linear, prefix, next } = w;
  const freshConnector = async () => (await asOwner("connectors", { action: "add", provider: "github", repo: `acme/r${next()}`, project: prefix })).connectorId as string;

  /** An issue claimed by the first owner's agent, for the force-release row. */
  async function claimedIssue(): Promise<string> {
    const owner = actors.owner.agent;
    const saved = await call(owner, "save_issue", { title: `stuck ${next()}`, work: true, changeType: "feat", noDependency: "alone" });
    const claimed = await call(owner, "claim_issue", { identifier: saved.structuredContent.identifier });
    if (claimed.isError) throw new Error(JSON.stringify(claimed.structuredContent));
    return saved.structuredContent.identifier;
  }

  /** An issue the owner's agent claimed and released three times with no checkpoint: quarantined (decision 055). */
  async function quarantinedIssue(): Promise<string> {
    const owner = actors.owner.agent;
    const identifier = (await call(owner, "save_issue", { title: `poison ${next()}`, work: true, changeType: "feat", noDependency: "alone" })).structuredContent.identifier;
    for (let i = 0; i < 3; i++) {
      const claimed = await call(owner, "claim_issue", { identifier });
      await call(owner, "release_issue", { identifier, claimToken: claimed.structuredContent.claimToken });
    }
    return identifier;
  }

  /** An outsider's issue from GitHub, awaiting triage; with the digest of its text as a person is shown it. */
  async function heldIssue(): Promise<{ identifier: string; digest: string }> {
    const id = 8_000_000 + next();
    const opened = structuredClone(examples.find((e) => e.name === "issues")!.examples.find((x) => x.action === "opened")!);
    Object.assign(opened.issue, { id, number: id % 100_000, title: `Outside ${id}`, body: "Please.", author_association: "NONE" });
    expect((await fetch(await githubDelivery(w.hook, w.hookSecret, "issues", opened))).status).toBe(202);
    return waitFor(
      async () => {
        const { issues } = await cliGet(people.owner, "triage", { limit: "50" });
        return issues.find((i: any) => i.title === `Outside ${id}`) as { identifier: string; digest: string } | undefined;
      },
      20_000,
      "the outsider's issue",
    );
  }

  return [
    {
      action: "create a project",
      allowed: managers,
      doors: {
        Dash: (a) => dash(a, "/dash/settings/projects", { name: "Another", prefix: `P${next()}` }),
        CLI: (a) => cli(a, "projects", { name: "Another", prefix: `Q${next()}` }),
      },
    },
    {
      action: "connect a repository",
      allowed: managers,
      doors: {
        Dash: (a) => dash(a, "/dash/settings/connectors", { intent: "connect", provider: "github", repo: `acme/d${next()}`, project: prefix }),
        CLI: (a) => cli(a, "connectors", { action: "add", provider: "github", repo: `acme/c${next()}`, project: prefix }),
      },
    },
    {
      action: "set a connector's reviewer",
      allowed: managers,
      doors: { Dash: async (a) => dash(a, "/dash/settings/connectors", { intent: "reviewer", connectorId: await freshConnector(), reviewer: people.member.email }) },
    },
    {
      action: "revoke a connector",
      allowed: managers,
      doors: {
        Dash: async (a) => dash(a, "/dash/settings/connectors", { intent: "revoke", connectorId: await freshConnector() }),
        CLI: async (a) => cli(a, "connectors", { action: "revoke", connectorId: await freshConnector() }),
        ...agentDoors(async (client) => mcp(client, "revoke_connector", { connectorId: await freshConnector() })),
      },
    },
    {
      action: "add the Slack app (notifications)",
      allowed: managers,
      doors: { Dash: (a) => dash(a, "/dash/settings/notifications", { intent: "install-slack" }) },
    },
    {
      action: "mute their own notifications",
      allowed: everyone,
      doors: { Dash: (a) => dash(a, "/dash/settings/notifications", { intent: "mute", kind: "done" }) },
    },
    {
      action: "release another's stuck claim",
      allowed: managers,
      doors: { Dash: async (a) => dash(a, `/dash/issues/${await claimedIssue()}`, { intent: "release", reason: "stuck" }) },
    },
    {
      action: "accept an outsider's issue out of triage ³",
      allowed: everyone,
      allowedOn: { "MCP (agent key)": [], "MCP (session key)": [] },
      doors: {
        Dash: async (a) => {
          const held = await heldIssue();
          return dash(a, `/dash/issues/${held.identifier}`, { intent: "accept", digest: held.digest });
        },
        CLI: async (a) => cli(a, "triage", { action: "accept", ...(await heldIssue()) }),
        ...agentDoors(async (client) => mcp(client, "save_issue", { identifier: (await heldIssue()).identifier, triage: "accepted" })),
      },
    },
    {
      action: "release a quarantined issue to agents ⁴",
      allowed: everyone,
      allowedOn: { "MCP (agent key)": [], "MCP (session key)": [] },
      doors: {
        Dash: async (a) => dash(a, `/dash/issues/${await quarantinedIssue()}`, { intent: "unquarantine" }),
        CLI: async (a) => cli(a, "issues", { action: "unquarantine", identifier: await quarantinedIssue() }),
        ...agentDoors(async (client) => mcp(client, "save_issue", { identifier: await quarantinedIssue(), status: "todo" })),
      },
    },
    {
      action: "import from a tracker (the sources, then what a token sees: run_import's first step)",
      allowed: managers,
      doors: agentDoors(async (client) => {
        const sources = await mcp(client, "list_import_sources", {});
        return sources === OK ? mcp(client, "run_import", { source: "linear", token: linear.apiKey }) : sources;
      }),
    },
    {
      action: "read the org's imports (latest_import, import_history)",
      allowed: managers,
      doors: agentDoors(async (client) => {
        const latest = await mcp(client, "latest_import", {});
        return latest === OK || latest === "NOT_FOUND" ? mcp(client, "import_history", {}) : latest;
      }),
    },
    {
      action: "mint a session key",
      allowed: everyone,
      doors: agentDoors((client) => mcp(client, "mint_session_key", {})),
    },
  ];
}
