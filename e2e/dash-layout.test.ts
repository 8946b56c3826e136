import { createRequire } from "node:module";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testDriver } from "../server/testing/db.ts";
import { sql } from "drizzle-orm";
import { query } from "../db/client.ts";
import { callOk, connectClient } from "../server/mcp/testing.ts";
import { ensureMember, ensureUser, mintAgentKey } from "../server/orgs/index.ts";
import { screenshot, startDashWorld, watchConsole, type DashWorld } from "./dash-fixture.ts";

/**
 * Every page of the Dash and the public pages, at a laptop's width (1280 px) and a phone's
 * (390 px), over an org with long content (a long checkpoint note, Markdown comments,
 * attachments, a deadline, a chain of blockers): none scrolls sideways, none logs a console
 * error, and axe-core finds no serious or critical violation. The Dash's pages are read from
 * its navigation, so a page added there is checked too. Screenshots land in e2e/artifacts/.
 */
const axePath = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
// The phone first: each page is loaded at 390 px, then widened to 1280 px (inspect).
const widths = [390, 1280] as const;

let world: DashWorld;
let signedIn: BrowserContext;
let signedOut: BrowserContext;
let signedInDark: BrowserContext;
const issueIds: string[] = [];
let inviteLink = "";
let reviewed = "";

interface Finding {
  page: string;
  width: number;
  problem: string;
}

/**
 * Loads a page once, at the first of `at` (the phone's width first, as a phone opens it), and says
 * what is wrong with it at each width in turn, the window resized between: sideways scroll and axe
 * at every width, answers and console errors once. One navigation per page, not one per width.
 */
async function inspect(page: Page, path: string, at: readonly number[], name: string, act?: (page: Page) => Promise<void>): Promise<Finding[]> {
  const { errors } = watchConsole(page);
  await page.setViewportSize({ width: at[0]!, height: 900 });
  const response = await page.goto(`${world.main.url}${path}`);
  await page.waitForLoadState("networkidle").catch(() => {});
  if (act) await act(page);
  const found: Finding[] = [];
  if (response?.status() !== 200) found.push({ page: name, width: at[0]!, problem: `answered ${response?.status()}` });
  await page.addScriptTag({ path: axePath });
  for (const width of at) {
    if (width !== at[0]) {
      await page.setViewportSize({ width, height: 900 });
      // Two frames: the resize's layout and whatever a media query's change renders.
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    }
    const wide = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
    if (wide.scroll > wide.inner) {
      const culprits = await page.evaluate(() =>
        [...document.querySelectorAll("body *")]
          .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
          .slice(0, 4)
          .map((el) => `${el.tagName.toLowerCase()}.${String(el.className).slice(0, 60)}`),
      );
      found.push({ page: name, width, problem: `${wide.scroll} px wide in a ${wide.inner} px window (${culprits.join("; ")})` });
    }
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
      const result = await axe.run();
      return result.violations
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => `${v.impact} ${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
    });
    for (const v of violations) found.push({ page: name, width, problem: `axe ${v}` });
    await screenshot(page, `layout-${name}-${width}`);
  }
  for (const e of errors) found.push({ page: name, width: at[0]!, problem: e });
  return found;
}

describe.skipIf(testDriver !== "postgres")("every page at 1280 and 390 px (needs TEST_DATABASE_URL)", () => {
  beforeAll(async () => {
    world = await startDashWorld();
    // axe is injected as a script tag, which the pages' Content-Security-Policy would refuse.
    signedIn = await world.browser.newContext({ bypassCSP: true });
    await signedIn.addCookies(await world.owner.page.context().cookies());
    signedOut = await world.browser.newContext({ bypassCSP: true });
    signedInDark = await world.browser.newContext({ bypassCSP: true, colorScheme: "dark" });
    await signedInDark.addCookies(await world.owner.page.context().cookies());

    const claude = await world.agent("claude-code");
    const codex = await world.agent("codex");
    const gate = await callOk(codex, "save_issue", {
      title: "Publish the quarterly security report to every customer workspace before the audit window closes",
      work: true,
      changeType: "feat",
      noDependency: "writing only",
      priority: 1,
      dueAt: new Date(Date.now() + 3 * 86_400_000).toISOString(),
    });
    const work = await callOk(claude, "save_issue", {
      title: "Rotate the signing keys",
      work: true,
      changeType: "feat",
      blockedBy: [gate.identifier],
      body: "## Plan\n\n1. mint the new key\n2. **dual-sign** for a day\n\n- [x] keys listed\n- [ ] old key revoked\n\n```sh\nretasc-admin rotate --org northwind --kind signing --really-long-flag-that-keeps-going-and-going\n```",
    });
    const held = await callOk(claude, "save_issue", { title: "Ship the login page", work: true, changeType: "feat", noDependency: "self-contained" });
    // A container whose graph is wider than a phone: a chain of four and eight standalone issues.
    const release = await callOk(claude, "save_issue", { title: "The spring release", work: false, changeType: "feat", noDependency: "container" });
    let previous: string | null = null;
    const parts: string[] = [];
    for (let i = 0; i < 12; i++) {
      const part: { identifier: string } = await callOk(claude, "save_issue", {
        title: `Release part ${i + 1}`,
        work: true,
        changeType: "feat",
        parent: release.identifier,
        ...(previous && i < 4 ? { blockedBy: [previous] } : { noDependency: "standalone" }),
        // Alike by design: the parts before it are read (the duplicate gate, decision 066).
        reviewedSimilar: [...parts],
      });
      previous = part.identifier;
      parts.push(part.identifier);
    }
    // One agents kept abandoning: quarantined, its page shows why and the release button (decision 055).
    const poison = await callOk(codex, "save_issue", { title: "Run the flaky migration suite", work: true, changeType: "test", noDependency: "alone" });
    for (const note of ["the suite hangs at step 3", "hung again", "same hang"]) {
      const claimed = await callOk(codex, "claim_issue", { identifier: poison.identifier });
      await callOk(codex, "release_issue", { identifier: poison.identifier, claimToken: claimed.claimToken, note });
    }
    issueIds.push(held.identifier, work.identifier, gate.identifier, release.identifier, poison.identifier);
    const claim = await callOk(claude, "claim_issue", { identifier: held.identifier });
    await callOk(claude, "checkpoint", {
      identifier: held.identifier,
      claimToken: claim.claimToken,
      done: "form and validation",
      next: `wire the session cookie through app/routes/auth.server.ts and then ${"x".repeat(120)} before anything else is changed in the login flow`,
    });
    await callOk(claude, "save_comment", { issue: held.identifier, body: "Looks **good**; see `auth.server.ts`.\n\n- one\n- two" });
    await callOk(claude, "save_attachment", { issue: held.identifier, url: "https://example.com/pull/42", title: "Pull request 42" });
    await callOk(claude, "save_attachment_file", {
      issue: held.identifier,
      filename: "trace.txt",
      contentBase64: Buffer.from("a trace of the login flow\n".repeat(20)).toString("base64"),
    });

    // An accepted review (decision 073): a second person's agent claims and accepts the owner's
    // agent's work, so the Analytics page charts a time in review.
    const { db } = world.database.database;
    const [home] = await query<{ org_id: string; project_id: string }>(db, sql`select org_id, id as project_id from projects where prefix = ${world.prefix}`);
    const ritaEmail = `rita-${Date.now()}@example.com`;
    const rita = await ensureUser(db, ritaEmail, "Rita");
    await ensureMember(db, home!.org_id, rita);
    const reviewer = await connectClient(`${world.main.url}/mcp`, (await mintAgentKey(db, { orgId: home!.org_id, userId: rita, projectId: home!.project_id, runtime: "codex" })).key);
    const audit = await callOk(claude, "save_issue", { title: "Export the audit log as CSV", work: true, changeType: "feat", noDependency: "standalone" });
    reviewed = audit.identifier;
    const built = await callOk(claude, "claim_issue", { identifier: audit.identifier });
    await callOk(claude, "save_issue", { identifier: audit.identifier, claimToken: built.claimToken, status: "review", assignee: ritaEmail, handoff: "built on rtsc/audit-csv" });
    const accepting = await callOk(reviewer, "claim_issue", { identifier: audit.identifier });
    await callOk(reviewer, "save_issue", { identifier: audit.identifier, claimToken: accepting.claimToken, status: "done" });
    await reviewer.close();

    const owner = await signedIn.newPage();
    await owner.goto(`${world.main.url}/dash/settings/members`);
    await owner.getByRole("button", { name: "New invite" }).click();
    await owner.getByTestId("new-invite").waitFor();
    inviteLink = new URL((await owner.locator("#box-or-open").textContent())!.trim()).pathname;
    await owner.close();
  });
  afterAll(async () => {
    await signedIn?.close();
    await signedOut?.close();
    await signedInDark?.close();
    await world?.close();
  });

  test("no page scrolls sideways, logs a console error or has a serious accessibility violation", async () => {
    const page = await signedIn.newPage();
    await page.goto(`${world.main.url}/dash`);
    // The Fleet page's four charts, each an image with a name.
    expect(await page.getByRole("img", { name: /^(Issues finished|Median time from first claim|Reclaims of lapsed leases|Open issues by status)/ }).count()).toBe(4);
    const navPaths = await page.getByRole("navigation", { name: "Dash" }).getByRole("link").evaluateAll((links) => links.map((l) => new URL((l as HTMLAnchorElement).href).pathname));
    expect(navPaths).toEqual(expect.arrayContaining(["/dash", "/dash/queue", "/dash/analytics", "/dash/settings/members", "/dash/settings/keys", "/dash/settings/projects"]));
    const dashPages = [...new Set([...navPaths, ...issueIds.map((id) => `/dash/issues/${id}`), "/dash/issues/new", "/dash/orgs/new", inviteLink, "/dash?range=week", "/dash/analytics?days=30"])];
    const slug = (path: string) => path.replace(/^\//, "").replace(/[^a-zA-Z0-9]+/g, "-") || "home";

    const findings: Finding[] = [];
    for (const path of dashPages) findings.push(...(await inspect(page, path, widths, slug(path.startsWith("/join/") ? "/join" : path))));
    // The page as it is right after minting a key and a setup code (long secrets shown once).
    findings.push(
      ...(await inspect(page, "/dash/settings/keys", widths, "keys-minted", async (p) => {
        await p.getByRole("button", { name: "Mint key" }).click();
        await p.getByTestId("new-key").waitFor();
        await p.getByRole("button", { name: "Get a setup code" }).click();
        await p.getByTestId("setup-code").waitFor();
      })),
    );
    // Dark mode (the system setting): the same pages keep their contrast.
    const dark = await signedInDark.newPage();
    for (const path of ["/dash", "/dash/queue", "/dash/analytics", `/dash/issues/${issueIds[0]}`, "/dash/settings/members"]) {
      findings.push(...(await inspect(dark, path, [1280], `dark-${slug(path)}`)));
    }
    expect(findings).toEqual([]);
  });

  test("the Analytics page charts time in review with a table beside it for screen readers", async () => {
    const page = await signedIn.newPage();
    await page.goto(`${world.main.url}/dash/analytics`);
    await page.getByRole("img", { name: /^1 review accepted; p50 .+, p90 .+; the longest / }).waitFor();
    const table = page.getByTestId("analytics-review");
    expect(await table.getByRole("link").first().textContent()).toBe(reviewed);
    expect(await table.locator("caption").textContent()).toMatch(/from entering review to done/);
    const all = page.getByTestId("flow-all-all");
    expect(await all.locator("td").nth(9).textContent()).toBe("1");
    await page.close();
  });

  test("the pages for people who have not signed in, every public page among them", async () => {
    const slug = (path: string) => path.replace(/^\//, "").replace(/[^a-zA-Z0-9]+/g, "-") || "home";
    // Every public page the server lists for agents (server/site/registry.ts), as /llms.txt names them.
    const llms = await (await fetch(`${world.main.url}/llms.txt`)).text();
    const pagesSection = llms.slice(llms.indexOf("## Pages"), llms.indexOf("## Docs"));
    const publicPages = [...pagesSection.matchAll(/\]\(https?:\/\/[^/]+(\/[a-z/-]+)\.md\): /g)].map((m) => m[1]!);
    expect(publicPages).toEqual(expect.arrayContaining(["/product", "/compare", "/wire", "/pricing", "/connectors", "/migrate", "/guides", "/guides/agent-swarm"]));
    const findings: Finding[] = [];
    const outPage = await signedOut.newPage();
    for (const path of ["/", "/auth/sign-in", "/auth/sign-up", "/docs", "/docs/security", "/docs/decisions/036-a-claim-is-its-token-sessions-hold-leases", ...publicPages]) {
      findings.push(...(await inspect(outPage, path, widths, slug(path))));
    }
    expect(findings).toEqual([]);
  });

  test("the keys: / searches, j and k move through the rows, ? lists the keys, c creates", async () => {
    const page = await signedIn.newPage();
    await page.setViewportSize({ width: 1280, height: 900 });
    const { errors } = watchConsole(page);
    // A key pressed before hydration is lost: wait until the keys are listened for.
    const keysOn = () => page.locator("html[data-shortcuts=on]").waitFor({ state: "attached" });
    await page.goto(`${world.main.url}/dash`);
    await keysOn();
    // From a page with no search field, / goes to the queue's.
    await page.keyboard.press("/");
    await page.waitForURL(/\/dash\/queue$/);
    // The queue focuses its field once it has rendered: on a loaded machine, well past poll's 1 s default.
    await expect.poll(() => page.evaluate(() => document.activeElement?.id), { timeout: 15_000 }).toBe("queue-search");
    await page.keyboard.type("login");
    await page.keyboard.press("Enter");
    await page.waitForURL(/q=login/);
    await expect.poll(() => page.locator('[data-testid^="queue-row-"]').count(), { timeout: 15_000 }).toBe(1);
    await page.goto(`${world.main.url}/dash/queue`);
    await keysOn();
    const focused = () => page.evaluate(() => document.activeElement?.textContent?.trim());
    await page.keyboard.press("j");
    expect(await focused()).toBe(issueIds[2]);
    await page.keyboard.press("j");
    expect(await focused()).toBe(issueIds[1]);
    await page.keyboard.press("k");
    expect(await focused()).toBe(issueIds[2]);
    await page.keyboard.press("?");
    const dialog = page.getByRole("dialog", { name: "Keyboard shortcuts" });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain("create an issue");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    await page.keyboard.press("c");
    await page.waitForURL(/\/dash\/issues\/new$/);
    expect(errors).toEqual([]);
  });
});
