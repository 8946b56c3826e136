import crypto from "node:crypto";
import fs from "node:fs";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { systemPrincipal, type Services } from "../context.ts";
import { withPrincipal } from "../with-principal.ts";
import { createConnector } from "../intake/create.ts";
import { intakeWebhookResponse } from "../intake/http.ts";
import { processDelivery } from "../intake/process.ts";
import { personCtx } from "../intake/testing.ts";
import { acceptTriage, listTriage } from "../intake/triage.ts";
import { saveAttachment, obsoleteAttachment } from "../issues/attachments.ts";
import { saveAttachmentFile } from "../issues/attachments-files.ts";
import { retractComment, saveComment } from "../issues/comments.ts";
import { getIssue, saveIssue } from "../issues/index.ts";
import { createLogger } from "../log.ts";
import { startEmail } from "../notify/bindings.ts";
import { peopleOf } from "../orgs/testing.ts";
import { completeSlackInstall, slackInstallUrl } from "../notify/slack.ts";
import { checkpoint, claimIssue, releaseIssue } from "../queue/index.ts";
import { createTestDatabase, servicesFor, testConfig, type TestDatabase } from "../testing/db.ts";
import { githubDelivery, startFakeGithub } from "../../test/fakes/github.ts";
import { generateWorkspace } from "../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../test/fakes/linear.ts";
import { startFakeSlack, type FakeSlack } from "../../test/fakes/slack.ts";
import { startFakeSmtp, type FakeSmtp } from "../../test/fakes/smtp.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { tempDir } from "../testing/temp-dirs.ts";
import { waitFor } from "../testing/wait.ts";
import { attestVerification } from "../verification/attest.ts";
import { setVerification } from "../verification/settings.ts";
import { importExport } from "../transfer/import.ts";
import { writeExport } from "../transfer/testing.ts";
import { startLinearImport } from "../transfer/linear/start.ts";
import { keepCredential } from "../transfer/pipeline/kept-credentials.ts";
import type { FakeForge } from "../../test/fakes/git-forge.ts";

/**
 * Encryption at rest, column by column: a marker goes into every kind of encrypted column
 * (every `*_enc` column of the schema) through the code that writes it, then every table is
 * read back as stored and no marker may appear. A new encrypted column with no probe here fails
 * the first test, so the scan cannot silently miss it. Secrets that are never stored at all
 * (claim tokens, agent keys, a Linear API key) are markers too.
 */
let tdb: TestDatabase;
let services: Services;
let org: SeededOrg;
let fakes: { github: FakeForge; slack: FakeSlack; smtp: FakeSmtp; linear: FakeLinear };
const markers: string[] = [];
const marker = (what: string) => {
  const value = `${what}-${crypto.randomBytes(6).toString("hex")}`;
  markers.push(value);
  return value;
};

beforeAll(async () => {
  const workspace = generateWorkspace({ issues: 3 });
  workspace.issues[0]!.title = marker("linear-issue-title");
  const [github, slack, smtp, linear] = await Promise.all([
    startFakeGithub({ token: "ghp_unused" }),
    startFakeSlack(),
    startFakeSmtp(),
    startFakeLinear({ apiKey: `lin_api_${crypto.randomBytes(12).toString("hex")}`, workspace }),
  ]);
  fakes = { github, slack, smtp, linear };
  tdb = await createTestDatabase();
  services = servicesFor(tdb.database, {
    config: testConfig({
      GITHUB_API_URL: github.url,
      SLACK_CLIENT_ID: slack.clientId,
      SLACK_CLIENT_SECRET: slack.clientSecret,
      SLACK_SIGNING_SECRET: slack.signingSecret,
      SLACK_API_URL: slack.apiUrl,
      SMTP_URL: smtp.url,
      SMTP_FROM: "Retasc <retasc@example.com>",
      LINEAR_API_URL: linear.apiUrl,
      LINEAR_UPLOADS_URL: linear.url,
      RETASC_OUTBOUND_ALLOW_HOSTS: new URL(linear.url).host,
    }),
  });
  org = await seedOrg(services, { prefix: "SCAN" });
});
afterAll(async () => {
  await Promise.all([fakes?.github.close(), fakes?.slack.close(), fakes?.smtp.close(), fakes?.linear.close()]);
  await tdb?.close();
});

/** Writes markers into the columns it names, through the product's own code. */
type Probe = { columns: string[]; write: () => Promise<void> };

const probes: Probe[] = [
  {
    columns: ["issues.title_enc", "issues.body_enc", "issues.no_dependency_enc", "checkpoints.done_enc", "checkpoints.next_enc", "checkpoints.gotchas_enc", "checkpoints.note_enc", "activity.detail_enc"],
    async write() {
      const a = org.agents.alice.ctx;
      const title = marker("title");
      const body = marker("body");
      const noDependency = marker("nodep");
      const issue = await saveIssue(a, { title, body, work: true, changeType: "feat", noDependency });
      const claim = await claimIssue(a, { identifier: issue.identifier });
      markers.push(claim.claimToken, org.agents.alice.key);
      const note = marker("checkpoint");
      await checkpoint(a, { identifier: issue.identifier, claimToken: claim.claimToken, done: note, next: marker("next"), gotchas: marker("gotchas"), note: marker("note") });
      await releaseIssue(a, { identifier: issue.identifier, claimToken: claim.claimToken, note: marker("release-note") });
      // ...while reads through the org's key see it all.
      expect(await getIssue(a, { identifier: issue.identifier })).toMatchObject({ title, body, noDependency, checkpoint: { done: note } });
    },
  },
  {
    columns: ["issues.cancel_reason_enc"],
    async write() {
      const a = org.agents.alice.ctx;
      const issue = await saveIssue(a, { title: "to cancel", work: true, changeType: "feat", noDependency: "none" });
      await saveIssue(a, { identifier: issue.identifier, status: "canceled", cancelReason: marker("cancel-reason") });
    },
  },
  {
    columns: ["comments.body_enc", "comments.retract_note_enc"],
    async write() {
      const a = org.agents.alice.ctx;
      const issue = await saveIssue(a, { title: "discussed", work: true, changeType: "feat", noDependency: "none" });
      const comment = await saveComment(a, { issue: issue.identifier, body: marker("comment") });
      await retractComment(a, { comment: comment.id, note: marker("retract-note") });
    },
  },
  {
    columns: ["attachments.url_enc", "attachments.title_enc", "attachments.obsolete_reason_enc", "attachment_files.content_enc"],
    async write() {
      const a = org.agents.alice.ctx;
      const issue = await saveIssue(a, { title: "attached", work: true, changeType: "feat", noDependency: "none" });
      const link = await saveAttachment(a, { issue: issue.identifier, url: `https://example.com/${marker("link-url")}`, title: marker("link-title") });
      await obsoleteAttachment(a, { attachment: link.id, reason: marker("obsolete-reason") });
      const content = Buffer.from(`file content ${marker("file-content")}\n`).toString("base64");
      await saveAttachmentFile(a, { issue: issue.identifier, filename: `${marker("filename")}.txt`, contentBase64: content });
    },
  },
  {
    columns: ["connectors.token_enc", "connectors.webhook_secret_enc", "intake_deliveries.payload_enc"],
    async write() {
      const system = withPrincipal(services, systemPrincipal(org.orgId));
      const connector = await createConnector(system, { provider: "github", repo: "Codertocat/Hello-World", project: "SCAN", token: marker("ghp-token") });
      markers.push(connector.secret);
      const payload = { action: "opened", issue: { id: 1, number: 1, title: marker("delivery-title"), body: "", user: { login: "x" }, labels: [] }, repository: { full_name: "Codertocat/Hello-World" } };
      const url = `http://localhost/webhooks/github/${connector.connectorId}`;
      const reply = await intakeWebhookResponse(services, createLogger("silent"), "github", connector.connectorId, await githubDelivery(url, connector.secret, "issues", payload));
      expect(reply.status).toBe(202);
    },
  },
  {
    // Outsiders' text held for a person and the digest a person signed (decision 038).
    columns: ["intake_held.text_enc", "intake_links.signed_digest_enc"],
    async write() {
      const system = withPrincipal(services, systemPrincipal(org.orgId));
      const connector = await createConnector(system, { provider: "github", repo: "acme/held", project: "SCAN" });
      const url = `http://localhost/webhooks/github/${connector.connectorId}`;
      const outsiders = (id: number) => ({
        action: "opened",
        issue: { id, number: id, title: marker("held-title"), body: marker("held-body"), html_url: `https://github.com/acme/held/issues/${id}`, state: "open", user: { login: "stranger" }, author_association: "NONE", labels: [], updated_at: "2030-01-01T00:00:00Z" },
      });
      for (const id of [901, 902]) {
        const reply = await intakeWebhookResponse(services, createLogger("silent"), "github", connector.connectorId, await githubDelivery(url, connector.secret, "issues", outsiders(id)));
        expect(reply.status).toBe(202);
      }
      // No job runner here: the deliveries are processed in place.
      const rows = await query<{ id: string }>(services.db, sql`select id from intake_deliveries where connector_id = ${connector.connectorId} order by received_at`);
      for (const row of rows) await processDelivery(services, row.id);
      const person = personCtx(services, org.orgId, org.agents.alice.userId);
      const { issues } = await listTriage(person, {});
      const accepted = issues.find((i) => i.source === "GitHub acme/held#902")!;
      markers.push(accepted.digest);
      await acceptTriage(person, { identifier: accepted.identifier, digest: accepted.digest });
    },
  },
  {
    columns: ["notify_bindings.address_enc"],
    async write() {
      await startEmail((await peopleOf(services, org)).as.bob, { email: `${marker("address")}@example.com` });
    },
  },
  {
    columns: ["notify_slack_installs.bot_token_enc"],
    async write() {
      const base = "https://retasc.example.com";
      const alice = (await peopleOf(services, org)).as.alice;
      const install = new URL(await slackInstallUrl(alice, base));
      const redirect = install.searchParams.get("redirect_uri")!;
      await completeSlackInstall(alice, { code: fakes.slack.issueCode(redirect), state: install.searchParams.get("state"), baseUrl: base });
      markers.push(fakes.slack.botToken);
    },
  },
  {
    columns: ["import_ghosts.email_enc"],
    async write() {
      // An export naming someone with no account here: the import keeps them as a placeholder, their email sealed.
      const file = await writeExport(withPrincipal(services, systemPrincipal(org.orgId)), tempDir("retasc-scan-"));
      const ghost = `${marker("ghost")}@example.com`;
      const bob = /"email":"(bob-[^"]+)"/.exec(fs.readFileSync(file, "utf8"))![1]!;
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replaceAll(bob, ghost));
      await importExport(services, { file, "org-name": "Scanned" }, { ownerUserId: org.agents.alice.userId });
    },
  },
  {
    columns: ["linear_import_pages.payload_enc", "import_staged_files.content_enc"],
    async write() {
      markers.push(fakes.linear.apiKey);
      // A file uploaded to Linear is downloaded into staging with the page (decision 060).
      fakes.linear.addFile(fakes.linear.workspace.issues[1]!, { title: "notes.txt", bytes: Buffer.from(`staged file ${marker("linear-file")}`) });
      const team = fakes.linear.workspace.team;
      await startLinearImport((await peopleOf(services, org)).as.alice, { apiKey: fakes.linear.apiKey, teamId: team.id, newProject: { name: "From Linear" } });
      // No job runner here: the fetched pages stay staged, encrypted, until an apply job that never comes.
      await waitFor(async () => (await count("linear_import_pages", "payload_enc")) > 0 && (await count("import_staged_files", "content_enc")) > 0, 10_000, "a staged Linear page and file");
    },
  },
  {
    // A credential an owner asked to keep for importing again (decision 094).
    columns: ["import_credentials.credential_enc"],
    async write() {
      const cipher = await services.keyring.forOrg(services.db, org.orgId);
      await keepCredential(services.db, cipher, { orgId: org.orgId, source: "linear", sourceId: "scan-team", keptBy: org.agents.alice.userId, now: new Date() }, { credential: { token: marker("kept-key") } });
    },
  },
  {
    // The line a red CI run leaves for the key that finished the work (decision 045).
    columns: ["key_riders.text_enc"],
    async write() {
      const a = org.agents.alice.ctx;
      const owner = personCtx(services, org.orgId, org.agents.alice.userId);
      await setVerification(owner, { projectId: org.projectId, mode: "ci" });
      const issue = await saveIssue(a, { title: "verified", work: true, changeType: "feat", noDependency: "none" });
      const claim = await claimIssue(a, { identifier: issue.identifier });
      const commit = crypto.randomBytes(20).toString("hex");
      await saveIssue(a, { identifier: issue.identifier, claimToken: claim.claimToken, status: "done", evidence: { commit } });
      const ci = { ...a, principal: { ...a.principal, projectId: org.projectId } };
      // A check's name is the CI's own label, kept in plaintext with its report to match the
      // project's required checks; so no marker: the rider is seen sealed by reading it back.
      const check = `scan-check-${crypto.randomBytes(4).toString("hex")}`;
      await attestVerification(ci, { identifier: issue.identifier, commit, status: "fail", check });
      await setVerification(owner, { projectId: org.projectId, mode: "off" });
      const [rider] = await query<{ text_enc: string }>(services.db, sql`select text_enc from key_riders where org_id = ${org.orgId}`);
      expect(String(rider!.text_enc)).not.toContain(check);
      expect((await services.keyring.forOrg(services.db, org.orgId)).decrypt(rider!.text_enc)).toContain(check);
    },
  },
];

async function count(table: string, column: string): Promise<number> {
  const [row] = await query<{ n: number }>(services.db, sql.raw(`select count(*)::int as n from "${table}" where "${column}" is not null`));
  return Number(row!.n);
}

/** Every value in every table, as the database stores it (bytes as Latin-1, so a plaintext file shows). */
async function everyStoredText(): Promise<string> {
  const tables = await query<{ table_name: string }>(services.db, sql`select table_name from information_schema.tables where table_schema = 'public'`);
  let all = "";
  for (const { table_name } of tables) {
    const rows = await query<Record<string, unknown>>(services.db, sql.raw(`select * from "${table_name}"`));
    all += JSON.stringify(rows, (_, value) => {
      // postgres.js hands bytea over as a Buffer (seen here after its toJSON), PGlite as a Uint8Array.
      if (value instanceof Uint8Array) return Buffer.from(value).toString("latin1");
      // PGlite hands int8 columns over as bigint, which JSON cannot write.
      if (typeof value === "bigint") return value.toString();
      if (value && typeof value === "object" && (value as { type?: string }).type === "Buffer") return Buffer.from((value as { data: number[] }).data).toString("latin1");
      return value;
    });
  }
  return all;
}

describe("encryption at rest, every encrypted column", () => {
  it("has a probe for every encrypted column of the schema", async () => {
    const columns = await query<{ name: string }>(
      services.db,
      sql`select table_name || '.' || column_name as name from information_schema.columns where table_schema = 'public' and column_name like '%\_enc' order by 1`,
    );
    const probed = new Set(probes.flatMap((p) => p.columns));
    expect(columns.map((c) => c.name).filter((c) => !probed.has(c)), "encrypted columns with no probe in plaintext-scan.test.ts: add one").toEqual([]);
  });

  it("stores no marker in plaintext anywhere, though every encrypted column was written", { timeout: 60_000 }, async () => {
    for (const probe of probes) await probe.write();
    for (const column of probes.flatMap((p) => p.columns)) {
      const [table, name] = column.split(".") as [string, string];
      expect(await count(table, name), `${column} was written by its probe`).toBeGreaterThan(0);
    }
    const stored = await everyStoredText();
    expect(markers.filter((m) => stored.includes(m)), "encryption at rest: plaintext found in the database").toEqual([]);
  });

  it("refuses one org's ciphertext under another org's key", async () => {
    const other = await seedOrg(services, { prefix: "OTHER" });
    const mine = await services.keyring.forOrg(services.db, org.orgId);
    const theirs = await services.keyring.forOrg(services.db, other.orgId);
    const sealed = mine.encrypt("only for my org");
    expect(mine.decrypt(sealed)).toBe("only for my org");
    expect(() => theirs.decrypt(sealed), "cross-org decryption refused").toThrow();
    const [row] = await query<{ title_enc: string }>(services.db, sql`select title_enc from issues where org_id = ${org.orgId} limit 1`);
    expect(() => theirs.decrypt(row!.title_enc), "cross-org decryption refused (a stored title)").toThrow();
  });
});
