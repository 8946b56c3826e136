import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { query } from "../../db/client.ts";
import { withPrincipal } from "../with-principal.ts";
import { humanPrincipal } from "../orgs/access.ts";
import { seedOrg, type SeededOrg } from "../testing/fixtures.ts";
import { useTestServices } from "../testing/database.ts";
import { saveIssue } from "./index.ts";
import { issueTermsSweep, RARE_MAX, similarOpenIssues } from "./similar.ts";
import { mentionsIn, termsOf } from "./similar-terms.ts";

const env = useTestServices();

/** The gate's answer for a title and body, as the org's first agent would get it. */
async function lookalikes(org: SeededOrg, title: string, body?: string) {
  const cipher = await env.services.keyring.forOrg(env.services.db, org.orgId);
  return (await similarOpenIssues(env.services.db, cipher, org.agents.alice.principal, title, body)).map((s) => s.identifier);
}

const idOf = async (identifier: string) =>
  (await query<{ id: string }>(env.services.db, sql`select id from issues where identifier = ${identifier}`))[0]!.id;
const person = (org: SeededOrg) => withPrincipal(env.services, humanPrincipal(org.orgId, org.agents.alice.userId, "dash"));
const file = (org: SeededOrg, title: string, body?: string) =>
  saveIssue(person(org), { title, ...(body ? { body } : {}), work: true, noDependency: "alone" });

describe("the duplicate gate's words (decision 066)", () => {
  it("keeps what an issue is about: no function or tracker words, plurals folded, the title apart from the body", () => {
    const terms = termsOf("Fix the crash when exporting invoices", "The invoices export crashes on Safari; add a test.");
    expect([...terms.title].sort()).toEqual(["crash", "exporting", "invoice"]);
    expect([...terms.body].sort()).toEqual(["export", "safari", "test"]);
    expect(mentionsIn("Follows web-12 and RTSC-3, not utf8 or a-b")).toEqual(["WEB-12", "RTSC-3"]);
  });
});

describe("the duplicate gate's matcher over the encrypted term index (decision 066)", () => {
  it("names an open issue sharing rare words, and one the text mentions; not unrelated ones", async () => {
    const org = await seedOrg(env.services, { prefix: "SIM" });
    const pdf = await file(org, "Render the invoice as a PDF", "Customers download a PDF of each invoice from the billing page.");
    const avatar = await file(org, "Avatar upload crashes on Safari");
    await file(org, "Dark mode for the settings screen");
    expect(await lookalikes(org, "Export invoices to PDF")).toEqual([pdf.identifier]);
    expect(await lookalikes(org, "Safari crashes while uploading an avatar")).toEqual([avatar.identifier]);
    expect(await lookalikes(org, "Keyboard shortcuts for the search box")).toEqual([]);
    // One shared title word is adjacent at most, not the same work.
    expect(await lookalikes(org, "Invoice numbering restarts each year")).toEqual([]);
    expect(await lookalikes(org, "Follow-up to SIM-3: the toggle animation", "See sim-3.")).toEqual(["SIM-3"]);
  });

  it("ignores words common in the org's open issues, however many share them", async () => {
    const org = await seedOrg(env.services, { prefix: "COM" });
    const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november"];
    for (const word of words.slice(0, 2)) await file(org, `Dashboard chart ${word}`);
    // Two open issues share "dashboard" and "chart": rare here, so both are named.
    expect((await lookalikes(org, "Dashboard chart legend")).sort()).toEqual(["COM-1", "COM-2"]);
    for (const word of words.slice(2, RARE_MAX + 1)) await file(org, `Dashboard chart ${word}`);
    // Past RARE_MAX open issues the two words say nothing about which work this is.
    expect(await lookalikes(org, "Dashboard chart legend")).toEqual([]);
    expect(await lookalikes(org, "Dashboard chart kilo")).toEqual([]);
  });

  it("reads open issues only: a canceled one is not named, and named again once reopened; a retitled one by its new words", async () => {
    const org = await seedOrg(env.services, { prefix: "OPN" });
    const issue = await file(org, "Rotate the webhook signing secret");
    expect(await lookalikes(org, "Webhook signing secret rotation")).toEqual([issue.identifier]);
    await saveIssue(person(org), { identifier: issue.identifier, status: "canceled", cancelReason: "not needed" });
    expect(await lookalikes(org, "Webhook signing secret rotation")).toEqual([]);
    // Reopened as CI's failed verification does (decision 045): the trigger on the status reopens its terms.
    await env.services.db.execute(sql`update issues set status = 'todo' where identifier = ${issue.identifier}`);
    expect(await lookalikes(org, "Webhook signing secret rotation")).toEqual([issue.identifier]);
    await saveIssue(person(org), { identifier: issue.identifier, title: "Paginate the audit export" });
    expect(await lookalikes(org, "Webhook signing secret rotation")).toEqual([]);
    expect(await lookalikes(org, "Audit export pagination")).toEqual([issue.identifier]);
  });

  it("never names another org's issue, nor one outside a scoped member's projects", async () => {
    const mine = await seedOrg(env.services, { prefix: "MINE" });
    const theirs = await seedOrg(env.services, { prefix: "THEIR" });
    await file(theirs, "Migrate the ledger to double entry");
    expect(await lookalikes(mine, "Migrate the ledger to double entry")).toEqual([]);
    const cipher = await env.services.keyring.forOrg(env.services.db, mine.orgId);
    const outOfScope = await similarOpenIssues(env.services.db, cipher, { ...mine.agents.alice.principal, projectIds: [] }, "Migrate the ledger to double entry", null);
    expect(outOfScope).toEqual([]);
  });

  it("holds no plaintext: titles stay ciphertext and terms are keyed digests that differ between orgs", async () => {
    const one = await seedOrg(env.services, { prefix: "ENCA" });
    const two = await seedOrg(env.services, { prefix: "ENCB" });
    const a = { id: await idOf((await file(one, "Quarterly zeppelin manifest")).identifier) };
    const b = { id: await idOf((await file(two, "Quarterly zeppelin manifest")).identifier) };
    const rows = await query<{ issue_id: string; term: string }>(env.services.db, sql`select issue_id, term::text as term from issue_terms where issue_id in (${a.id}, ${b.id})`);
    const termsOfIssue = (id: string) => new Set(rows.filter((r) => r.issue_id === id).map((r) => r.term));
    expect(termsOfIssue(a.id).size).toBe(3);
    expect([...termsOfIssue(a.id)].filter((t) => termsOfIssue(b.id).has(t))).toEqual([]);
    const dump = JSON.stringify(await query(env.services.db, sql`select i.title_enc, t.term::text as term, t.in_title from issues i join issue_terms t on t.issue_id = i.id where i.id = ${a.id}`));
    expect(dump).not.toMatch(/zeppelin|quarterly|manifest/i);
  });

  it("indexes issues written before the index (or by an export's import): the sweep, or a gated create first", async () => {
    const org = await seedOrg(env.services, { prefix: "OLD" });
    const filed = await file(org, "Throttle the nightly reconciliation job");
    const forget = async () => {
      await env.services.db.execute(sql`delete from issue_terms where org_id = ${org.orgId}`);
      await env.services.db.execute(sql`delete from issue_term_backfills where org_id = ${org.orgId}`);
    };
    await forget();
    expect(await lookalikes(org, "Nightly reconciliation job throttling")).toEqual([]);
    expect((await issueTermsSweep(env.services)).indexed).toBeGreaterThanOrEqual(1);
    expect(await lookalikes(org, "Nightly reconciliation job throttling")).toEqual([filed.identifier]);
    // Walked once: the next sweep has nothing of this org left.
    expect(await query(env.services.db, sql`select 1 from issue_term_backfills where org_id = ${org.orgId} and done_at is not null`)).toHaveLength(1);

    await forget();
    await expect(
      saveIssue(org.agents.alice.ctx, { title: "Nightly reconciliation job throttling", work: true, changeType: "perf", noDependency: "alone" }),
    ).rejects.toMatchObject({ code: "DUPLICATE_CHECK_REQUIRED", details: { similar: [expect.objectContaining({ identifier: filed.identifier })] } });
  });

  it("gates agents only; refuses reviewedSimilar on an update", async () => {
    const org = await seedOrg(env.services, { prefix: "WHO" });
    const first = await file(org, "Cache the exchange rate lookups");
    // A person (the Dash) files a look-alike unasked.
    await file(org, "Cache exchange rate lookups per currency");
    await expect(
      saveIssue(org.agents.bob.ctx, { identifier: first.identifier, title: "Cache the FX lookups", reviewedSimilar: ["WHO-2"] }),
    ).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("reviewedSimilar") });
  });
});
