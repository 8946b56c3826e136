import { agentDoors, call, doorsOf, managers, OK, owners, type RolesWorld, type Row } from "./roles-doors.ts";

/**
 * The rows of the org's data and money (issue 37, decision 043): export and import, deleting the
 * org, credit and the spend cap, and the views of the org's balance and keys. They come first in
 * the roles table of docs/security.md.
 */
export function dataAndBillingRows(w: RolesWorld): Row[] {
  const { dash, dashGet, cli, cliGet } = doorsOf(w);
  const { orgId, people, linear, exportFile, next } = w;
  const setExport = (allowed: boolean) => dash(people.owner, "/dash/settings/transfer", allowed ? { adminsMayExport: "on" } : {});
  return [
    {
      action: "export the org",
      allowed: owners,
      doors: {
        Dash: (a) => dashGet(a, "/dash/settings/transfer/export?format=csv&table=issues"),
        CLI: async (a) => ((r) => (r.status === 200 ? OK : r.error.code))(await cliGet(a, "export", { format: "csv" })),
      },
    },
    {
      action: "export the org, once an owner lets admins",
      allowed: managers,
      before: () => setExport(true),
      doors: {
        Dash: (a) => dashGet(a, "/dash/settings/transfer/export?format=csv&table=issues"),
        CLI: async (a) => ((r) => (r.status === 200 ? OK : r.error.code))(await cliGet(a, "export", { format: "csv" })),
      },
      after: () => setExport(false),
    },
    {
      action: "let admins export (Settings › Import & export)",
      allowed: owners,
      doors: { Dash: (a) => dash(a, "/dash/settings/transfer", { adminsMayExport: "on" }) },
      after: () => setExport(false),
    },
    {
      action: "import an export as a new org",
      allowed: managers,
      doors: {
        Dash: (a) => {
          const form = new FormData();
          form.set("orgName", `Imported ${next()}`);
          form.set("file", new Blob([exportFile], { type: "application/json" }), "export.json");
          return dash(a, "/dash/settings/transfer", form);
        },
      },
    },
    {
      action: "import from Linear (the teams a key sees, its first step)",
      allowed: managers,
      doors: {
        Dash: (a) => dash(a, "/dash/settings/import", { intent: "teams", apiKey: linear.apiKey }),
        CLI: (a) => cli(a, "import/linear", { action: "teams", apiKey: linear.apiKey }),
      },
    },
    {
      action: "import from a CSV (its preview, the first step)",
      allowed: managers,
      doors: {
        Dash: (a) => {
          const form = new FormData();
          form.set("source", "csv");
          form.set("intent", "preview");
          form.set("file", new Blob(["Title\nOne\n"], { type: "text/csv" }), "tasks.csv");
          return dash(a, "/dash/settings/import", form);
        },
        CLI: (a) => cli(a, "import/csv", { action: "preview", csv: "Title\nOne\n" }),
      },
    },
    {
      action: "rename a project's prefix ⁶",
      allowed: managers,
      probe: "NOT_FOUND",
      doors: {
        Dash: (a) => dash(a, "/dash/settings/projects", { intent: "rename-prefix", projectId: "NOPE", prefix: "ZZZ" }),
        CLI: (a) => cli(a, "projects", { action: "rename-prefix", project: "NOPE", prefix: "ZZZ" }),
      },
    },
    {
      action: "import again with a kept credential ⁵",
      allowed: managers,
      probe: "NOT_FOUND",
      doors: {
        Dash: (a) => dash(a, "/dash/settings/import", { intent: "again", source: "linear", sourceId: "no-such-team" }),
        CLI: (a) => cli(a, "import/kept", { action: "again", source: "linear", sourceId: "no-such-team" }),
      },
    },
    {
      action: "forget a kept import credential ⁵",
      allowed: managers,
      probe: "NOT_FOUND",
      doors: {
        Dash: (a) => dash(a, "/dash/settings/import", { intent: "forget", source: "linear", sourceId: "no-such-team" }),
        CLI: (a) => cli(a, "import/kept", { action: "forget", source: "linear", sourceId: "no-such-team" }),
      },
    },
    {
      action: "delete the org ¹",
      allowed: owners,
      probe: "INVALID_INPUT",
      doors: {
        Dash: (a) => dash(a, "/dash/settings/delete-org", { orgId, confirmName: "not the name" }),
        CLI: (a) => cli(a, "orgs/delete", { confirmName: "not the name" }),
      },
    },
    {
      action: "buy credit (Stripe Checkout)",
      allowed: owners,
      doors: { Dash: (a) => dash(a, "/dash/settings/billing", { intent: "buy", pack: "10" }), CLI: (a) => cli(a, "billing", { action: "buy", pack: 10 }) },
    },
    {
      action: "set the monthly spend cap",
      allowed: owners,
      doors: { Dash: (a) => dash(a, "/dash/settings/billing", { intent: "cap", monthlyUsd: "1000" }), CLI: (a) => cli(a, "billing", { action: "cap", monthlyUsd: 1000 }) },
    },
    {
      action: "see the org's balance and purchases",
      allowed: managers,
      narrower: "own spend",
      doors: {
        CLI: async (a) => ((await cliGet(a, "billing")).summary.balance ? OK : "own spend"),
        ...agentDoors(async (client) => ((await call(client, "billing_summary", {})).structuredContent.balance ? OK : "own spend")),
      },
    },
    {
      action: "see every key of the org",
      allowed: managers,
      narrower: "own keys",
      doors: { CLI: async (a) => ((await cliGet(a, "keys")).keys.some((k: any) => k.userId !== a.userId) ? OK : "own keys") },
    },
  ];
}
