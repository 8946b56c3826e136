import crypto from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { user } from "../../db/schema/index.ts";
import { waitFor } from "../testing/wait.ts";
import { Keyring } from "../crypto/index.ts";
import { ensureMember } from "../orgs/index.ts";
import { startApp, type AppProcess } from "../testing/app-process.ts";
import { query } from "../../db/client.ts";
import { seedOwnedOrg, selectedIn, signUpOverHttp } from "../testing/dash.ts";
import { createTestDatabase, testDriver, type TestDatabase } from "../testing/db.ts";
import { generateWorkspace } from "../../test/fakes/linear-workspace.ts";
import { type FakeLinear, startFakeLinear } from "../../test/fakes/linear.ts";

/**
 * The Dash's Linear import page over real HTTP against the built app and the fake Linear API:
 * plain form posts, as a browser without JavaScript sends them. (Seeding and verifying the
 * people needs the database beside the running app: PostgreSQL.)
 */
describe.skipIf(testDriver !== "postgres")("the Dash's Linear import (needs TEST_DATABASE_URL)", () => {
  let database: TestDatabase;
  let app: AppProcess;
  let linear: FakeLinear;
  let owner: { cookie: string; email: string };
  let member: { cookie: string };
  /** Every answer the app gave, status line, Location and body, to search for the key. */
  const seen: string[] = [];
  const masterKey = crypto.randomBytes(32);

  beforeAll(async () => {
    linear = await startFakeLinear({ workspace: generateWorkspace({ issues: 50 }) });
    database = await createTestDatabase({ max: 2 });
    app = await startApp({
      DATABASE_URL: database.url!,
      RETASC_MASTER_KEY: masterKey.toString("base64"),
      RETASC_EMAIL_PASSWORD: "on",
      RETASC_WORKERS: "inline",
      OUTBOX_POLL_MS: "200",
      LINEAR_API_URL: linear.apiUrl,
    });
    // The owner signs up with the email Linear gives the first issue's author, and has it verified.
    const w = linear.workspace;
    const email = w.users.find((u) => u.id === w.issues[0]!.creatorId)!.email;
    owner = { ...(await signUpOverHttp(app.url, email, "Owner")), email };
    await database.database.db.update(user).set({ emailVerified: true }).where(eq(user.email, email.toLowerCase()));
    const org = await seedOwnedOrg(database.database.db, new Keyring(masterKey), { ownerEmail: email, orgName: "Importers", prefix: "OWN", runtimes: [] });
    const memberEmail = `member-${crypto.randomBytes(3).toString("hex")}@example.com`;
    member = await signUpOverHttp(app.url, memberEmail, "Member");
    const [m] = await database.database.db.select({ id: user.id }).from(user).where(eq(user.email, memberEmail));
    await ensureMember(database.database.db, org.orgId, m!.id, "member");
  }, 120_000);
  afterAll(async () => {
    await app?.stop();
    await database?.close();
    await linear?.close();
  });

  const page = () => `${app.url}/dash/settings/import`;
  async function record(response: Response) {
    const body = await response.text();
    seen.push(`${response.status} ${response.headers.get("location") ?? ""}\n${body}`);
    return { status: response.status, location: response.headers.get("location"), body };
  }
  const post = async (cookie: string, fields: Record<string, string>) =>
    record(await fetch(page(), { method: "POST", redirect: "manual", headers: { cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields) }));
  const get = async (cookie: string, path = "/dash/settings/import") => record(await fetch(`${app.url}${path}`, { headers: { cookie } }));
  const progressOf = (html: string) => /data-testid="import-count">(\d+)<!-- --> of <!-- -->(\d+)</.exec(html);
  const finished = (runPath: string) =>
    waitFor(async () => {
      const { body } = await get(owner.cookie, runPath);
      return body.includes("Finished ") || body.includes("The import failed") ? body : null;
    }, 120_000, "the import to finish", 250);

  it("refuses a member who is not owner or admin, in words, never a 500", async () => {
    const shown = await get(member.cookie);
    expect(shown.status).toBe(200);
    expect(shown.body).toContain("Owners and admins import from Linear.");
    expect(shown.body).not.toContain('name="apiKey"');
    const refused = await post(member.cookie, { intent: "teams", apiKey: linear.apiKey });
    expect(refused.status).toBe(200);
    expect(refused.body).toMatch(/role="alert"[^>]*><p class="font-medium">[^<]*importing from Linear/);
    expect(refused.body).not.toContain("Engineering");
  });

  it("lists the key's teams, refuses a wrong key in words, dry runs with the owner's mapping, imports with it and progress, then warns before a re-import (the mapping kept) and refuses a second run", async () => {
    const form = await get(owner.cookie);
    expect(form.body).toMatch(/<input[^>]*name="apiKey"[^>]*type="password"|<input[^>]*type="password"[^>]*name="apiKey"/);

    const wrong = await post(owner.cookie, { intent: "teams", apiKey: "lin_api_not_this_one" });
    expect(wrong.status).toBe(200);
    expect(wrong.body).toContain("Linear refused the API key");

    const teams = await post(owner.cookie, { intent: "teams", apiKey: linear.apiKey });
    expect(teams.status).toBe(200);
    expect(teams.body).toContain("ENG<!-- --> · <!-- -->Engineering");
    expect(teams.body).toContain("50<!-- --> issues");
    expect(teams.body).not.toContain("last imported");

    const teamId = linear.workspace.team.id;
    // The dry run shows Linear's states by name, each a select of the form; the mapping sent is the one shown and the one applied.
    const plain = await post(owner.cookie, { intent: "dry-run", apiKey: linear.apiKey, teamId, target: "new", projectName: "Engineering" });
    expect(plain.body).toContain("Dry run: nothing was written");
    expect(selectedIn(plain.body, "status.In Review")).toBe("doing");
    expect(selectedIn(plain.body, "priority.urgent")).toBe("1");
    expect(plain.body).toMatch(/<select form="import-form" name="status.In Review"/);
    const mapping = { "status.In Review": "done", "priority.urgent": "4" };
    const dry = await post(owner.cookie, { intent: "dry-run", apiKey: linear.apiKey, teamId, target: "new", projectName: "Engineering", ...mapping });
    expect(selectedIn(dry.body, "status.In Review")).toBe("done");
    expect(selectedIn(dry.body, "priority.urgent")).toBe("4");
    expect(dry.body).toMatch(new RegExp(`<input(?=[^>]*value="${teamId}")(?=[^>]*checked="")[^>]*name="teamId"`));
    const started = await post(owner.cookie, { intent: "start", apiKey: linear.apiKey, teamId, target: "new", projectName: "Engineering", ...mapping });
    expect(started.status).toBe(302);
    const runPath = new URL(started.location!, app.url).pathname + new URL(started.location!, app.url).search;
    expect(runPath).toMatch(/^\/dash\/settings\/import\?run=[0-9a-f-]{36}$/);
    const done = await finished(runPath);
    expect(done).toContain("Finished ");
    expect(done).toMatch(/<progress[^>]*max="50"[^>]*value="50"/);
    expect(progressOf(done)?.slice(1)).toEqual(["50", "50"]);
    expect(done).toContain("50 created, 0 updated, 0 unchanged");
    expect(done).toContain('href="/dash/queue"');
    const w = linear.workspace;
    const inReview = new Set(w.issues.filter((i) => w.states.find((s) => s.id === i.stateId)!.name === "In Review").map((i) => i.number));
    const urgent = new Set(w.issues.filter((i) => i.priority === 1).map((i) => i.number));
    expect(inReview.size * urgent.size).toBeGreaterThan(0);
    const rows = await query<{ number: number; status: string; priority: number }>(database.database.db, sql`select i.number, i.status, i.priority from issues i join projects p on p.id = i.project_id where p.prefix = 'ENG'`);
    expect(rows.filter((r) => r.status === "done" && inReview.has(r.number)).length).toBe(inReview.size);
    expect(rows.filter((r) => urgent.has(r.number)).map((r) => r.priority)).toEqual([...urgent].map(() => 4));

    // Again: the page names the last import's date and asks first; unconfirmed, nothing starts.
    const again = await post(owner.cookie, { intent: "teams", apiKey: linear.apiKey });
    const lastImport = /last imported (\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC)/.exec(again.body)?.[1];
    expect(lastImport).toBeDefined();
    const projectId = /<option value="([0-9a-f-]{36})"[^>]*>ENG · Engineering \(an earlier import of ENG\)<\/option>/.exec(again.body.replaceAll("<!-- -->", ""))?.[1];
    expect(projectId).toBeDefined();
    const asked = await post(owner.cookie, { intent: "start", apiKey: linear.apiKey, teamId, target: projectId!, ...mapping });
    expect(asked.status).toBe(200);
    expect(selectedIn(asked.body, "status.In Review")).toBe("done");
    expect(asked.body.replaceAll("<!-- -->", "")).toContain(`ENG was last imported ${lastImport}. Importing it again overwrites edits made in Retasc to imported`);

    // Confirmed, it starts; its first page is held back by a rate limit, so a second start meets the running one.
    linear.rateLimitAt(3, { kind: "http429", retryAfterSeconds: 3 });
    const confirmed = await post(owner.cookie, { intent: "start", apiKey: linear.apiKey, teamId, target: projectId!, confirm: "on", ...mapping });
    expect(confirmed.status).toBe(302);
    const running = await get(owner.cookie, new URL(confirmed.location!, app.url).pathname + new URL(confirmed.location!, app.url).search);
    expect(running.body).toContain("Fetching from Linear");
    expect(running.body).toMatch(/<progress[^>]*max="50"[^>]*value="0"/);
    const conflict = await post(owner.cookie, { intent: "start", apiKey: linear.apiKey, teamId, target: projectId!, confirm: "on" });
    expect(conflict.status).toBe(200);
    expect(conflict.body).toContain("an import is already running in this org");
    const reimported = await finished(new URL(confirmed.location!, app.url).pathname + new URL(confirmed.location!, app.url).search);
    expect(reimported).toContain("0 created, 0 updated, 50 unchanged");
  }, 240_000);

  it("offers That's me on the owner's own placeholder only, and says why a claim is refused", async () => {
    const shown = await get(owner.cookie);
    expect(shown.body).toContain("Imported people");
    const w = linear.workspace;
    const mine = w.users.find((u) => u.email === owner.email)!;
    const claimable = [...shown.body.matchAll(/aria-label="That&#x27;s me: ([^"]+)"/g)].map((m) => m[1]);
    expect(claimable).toEqual([mine.name]);
    const ghostIds = [...shown.body.matchAll(/data-ghost="([0-9a-f-]{36})"/g)].map((m) => m[1]!);
    expect(ghostIds.length).toBeGreaterThan(1);
    const ghostOf = (name: string) => new RegExp(`data-ghost="([0-9a-f-]{36})"[^>]*><span class="font-medium">${name}<`).exec(shown.body)?.[1];

    const notVerified = await post(member.cookie, { intent: "claim", ghostId: ghostOf(mine.name)! });
    expect(notVerified.status).toBe(200);
    expect(notVerified.body).toContain("your email is not verified");
    const other = w.users.find((u) => u.id !== mine.id && ghostOf(u.name))!;
    const notMine = await post(owner.cookie, { intent: "claim", ghostId: ghostOf(other.name)! });
    expect(notMine.body).toContain("this placeholder&#x27;s email is not yours");

    const claimed = await post(owner.cookie, { intent: "claim", ghostId: ghostOf(mine.name)! });
    expect(claimed.body).toContain("Claimed: that history is yours now.");
    expect(claimed.body).not.toContain("aria-label=\"That&#x27;s me");
    const twice = await post(owner.cookie, { intent: "claim", ghostId: ghostOf(mine.name)! });
    expect(twice.body).toContain("this placeholder is already claimed");
  });

  it("never puts the key in a page, a redirect or the app's log", () => {
    expect(seen.length).toBeGreaterThan(10);
    for (const answer of seen) expect(answer).not.toContain(linear.apiKey);
    expect(app.output()).not.toContain(linear.apiKey);
  });
});
