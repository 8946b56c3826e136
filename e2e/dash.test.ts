import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testDriver } from "../server/testing/db.ts";
import { callOk } from "../server/mcp/testing.ts";
import { BRIEF_LEASE_SECONDS, eventually, phoneScreenshot, screenshot, startDashWorld, watchConsole, type DashWorld } from "./dash-fixture.ts";

/**
 * The Dash in Debian's Chromium against the built app on PostgreSQL: the fleet view is
 * live (an agent's claim over /mcp shows within 2 s, a lapsed lease shows its reclaim),
 * the queue's filters live in the URL, the drill-down shows what agents did, and no page
 * logs a console error. Screenshots land in e2e/artifacts/.
 */
let world: DashWorld;
let page: Page;
let consoleErrors: string[];

describe.skipIf(testDriver !== "postgres")("the Dash (needs TEST_DATABASE_URL)", () => {
  beforeAll(async () => {
    world = await startDashWorld();
    page = world.owner.page;
    await page.setViewportSize({ width: 1280, height: 900 });
    consoleErrors = watchConsole(page).errors;
  });
  afterAll(async () => {
    await world?.close();
  });

  async function openLive(path: string) {
    await page.goto(`${world.main.url}${path}`);
    await page.locator('[data-live="live"]').waitFor({ timeout: 10_000 });
    // Marks this document: if the page reloaded, the mark would be gone.
    await page.evaluate(() => ((window as unknown as { dashMark: number }).dashMark = 1));
  }
  const stillSameDocument = () => page.evaluate(() => (window as unknown as { dashMark?: number }).dashMark === 1);

  test("an agent's claim over /mcp shows on the open fleet view within 2 s, without a reload", async () => {
    const agent = await world.agent("claude-code");
    await callOk(agent, "save_issue", { title: "Ship the login page", work: true, changeType: "feat", noDependency: "self-contained", priority: 2 });
    await openLive("/dash");
    await page.getByText("No agent holds any issue right now.").waitFor();

    const claimedAt = Date.now();
    const claim = await callOk(agent, "claim_issue", { identifier: `${world.prefix}-1` });
    const row = page.getByTestId(`claim-${world.prefix}-1`);
    await row.waitFor({ timeout: 2_000 });
    expect(Date.now() - claimedAt).toBeLessThan(2_000);
    expect(await stillSameDocument()).toBe(true);
    await eventually(() => row.getByTestId("claim-runtime").textContent()).toBe("claude-code");
    await eventually(() => row.textContent()).toContain("Ship the login page");
    await eventually(() => row.textContent()).toContain(world.keys["claude-code"].slice(0, 12));

    // The lease ticks down in place, in a fixed-width cell.
    const lease = row.getByTestId("lease-left");
    const first = await lease.textContent();
    const box = await lease.boundingBox();
    await page.waitForTimeout(1_200);
    expect(await lease.textContent()).not.toBe(first);
    expect((await lease.boundingBox())?.width).toBe(box?.width);

    // A checkpoint shows as the latest one, live.
    await callOk(agent, "checkpoint", { identifier: claim.identifier, claimToken: claim.claimToken, done: "form and validation", next: "wire the session cookie" });
    await eventually(() => row.textContent(), 2_000).toContain("next: wire the session cookie");
    expect(await stillSameDocument()).toBe(true);
  });

  test("a lapsed lease shows its reclaim, then the handoff to another runtime", async () => {
    const codexOnBrief = await world.agent("codex", "brief");
    const created = await callOk(codexOnBrief, "save_issue", { title: "Rotate the signing keys", work: true, changeType: "feat", noDependency: "ops chore", priority: 1 });
    await openLive("/dash");
    await callOk(codexOnBrief, "claim_issue", { identifier: created.identifier });
    const row = page.getByTestId(`claim-${created.identifier}`);
    await row.waitFor({ timeout: 2_000 });
    await eventually(() => row.getByTestId("claim-runtime").textContent()).toBe("codex");

    // The agent goes silent; the other instance's sweep records the reclaim and this page shows it.
    const reclaim = page.locator(`[data-testid="move"][data-kind="reclaimed"][data-identifier="${created.identifier}"]`);
    await reclaim.waitFor({ timeout: (BRIEF_LEASE_SECONDS + 5) * 1000 });
    await eventually(() => reclaim.textContent()).toContain("lease of codex expired");
    await eventually(() => row.count()).toBe(0);

    const claude = await world.agent("claude-code");
    const again = await callOk(claude, "claim_issue", { identifier: created.identifier });
    expect(again.fence).toBe(2);
    const handoff = page.locator(`[data-testid="move"][data-kind="handoff"][data-identifier="${created.identifier}"]`);
    await handoff.waitFor({ timeout: 2_000 });
    await eventually(() => handoff.textContent()).toContain("codex → claude-code");
    await eventually(() => page.getByTestId(`claim-${created.identifier}`).textContent()).toContain("from codex");
    expect(await stillSameDocument()).toBe(true);
    await screenshot(page, "fleet-laptop");
    await phoneScreenshot(page, "fleet-phone");
  });

  test("queue filters live in the URL and survive a reload", async () => {
    const agent = await world.agent("claude-code");
    const blocker = await callOk(agent, "save_issue", { title: "Add the sessions table", work: true, changeType: "feat", noDependency: "schema first", priority: 4 });
    await callOk(agent, "save_issue", { title: "Remember me checkbox", work: true, changeType: "feat", blockedBy: [blocker.identifier], priority: 1 });
    await callOk(agent, "save_issue", { title: "Waiting on the vendor", work: true, changeType: "feat", noDependency: "external", status: "blocked", priority: 3 });

    await openLive("/dash/queue");
    const blockerRow = page.getByTestId(`queue-row-${blocker.identifier}`);
    await eventually(() => blockerRow.textContent()).toContain("inherits urgent from");
    await screenshot(page, "queue-laptop");
    await phoneScreenshot(page, "queue-phone");

    await page.getByRole("checkbox", { name: "todo" }).check();
    await page.getByRole("checkbox", { name: "doing" }).check();
    await page.getByRole("checkbox", { name: "urgent" }).check();
    await page.getByLabel("Runtime").selectOption("claude-code");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL(/status=todo/);
    const url = new URL(page.url());
    expect(url.searchParams.getAll("status")).toEqual(["todo", "doing"]);
    expect(url.searchParams.get("priority")).toBe("1");
    expect(url.searchParams.get("runtime")).toBe("claude-code");

    const visible = async () => (await page.locator('[data-testid^="queue-row-"]').evaluateAll((rows) => rows.map((r) => r.getAttribute("data-testid"))));
    // The URL changes as the navigation commits; the rows follow on the next render.
    // Urgent issues that claude-code has held: the one reclaimed from codex, then taken by claude-code.
    const filtered = [`queue-row-${world.prefix}-2`];
    await eventually(visible).toEqual(filtered);
    await page.reload();
    expect(await page.getByRole("checkbox", { name: "todo" }).isChecked()).toBe(true);
    expect(await page.getByRole("checkbox", { name: "doing" }).isChecked()).toBe(true);
    expect(await page.getByRole("checkbox", { name: "blocked" }).isChecked()).toBe(false);
    expect(await page.getByRole("checkbox", { name: "urgent" }).isChecked()).toBe(true);
    expect(await page.getByLabel("Runtime").inputValue()).toBe("claude-code");
    expect(await visible()).toEqual(filtered);

    await page.getByRole("link", { name: /^Backlog/ }).click();
    await page.waitForURL(/tab=backlog/);
    expect(new URL(page.url()).searchParams.get("runtime")).toBe("claude-code");
    // The URL commits before the page renders the new tab; Clear keeps the tab it renders with.
    await eventually(() => page.getByRole("link", { name: /^Backlog/ }).getAttribute("aria-current")).toBe("page");
    await page.getByRole("link", { name: "Clear" }).click();
    await page.waitForURL(/tab=backlog$/);
    await page.getByTestId(`queue-row-${blocker.identifier}`).waitFor();
    await eventually(() => page.getByTestId(`queue-row-${world.prefix}-1`).count()).toBe(0);
  });

  test("the drill-down shows the activity of MCP calls with their runtime, and acts through the same functions", async () => {
    const agent = await world.agent("codex");
    const audit = await callOk(agent, "save_issue", { title: "Audit token storage", work: true, changeType: "feat", noDependency: "first look" });
    const issue = await callOk(agent, "save_issue", {
      title: "Harden the password reset",
      work: true,
      changeType: "feat",
      blockedBy: [audit.identifier],
      body: "## Steps\n\n1. expire tokens\n2. rate-limit\n\n<script>window.pwned = 1</script>",
    });
    const announce = await callOk(agent, "save_issue", { title: "Announce the new reset flow", work: true, changeType: "feat", blockedBy: [issue.identifier], priority: 1 });
    await callOk(agent, "save_issue", { title: "Update the help center", work: true, changeType: "feat", blockedBy: [issue.identifier], priority: 4 });
    await callOk(agent, "save_issue", { identifier: audit.identifier, status: "canceled", cancelReason: "covered by the security review" });
    const claim = await callOk(agent, "claim_issue", { identifier: issue.identifier });
    await callOk(agent, "heartbeat", { identifier: issue.identifier, claimToken: claim.claimToken });
    await callOk(agent, "checkpoint", { identifier: issue.identifier, claimToken: claim.claimToken, done: "token expiry", gotchas: "clock skew" });
    await callOk(agent, "save_comment", { issue: issue.identifier, body: "Expiry is 15 minutes now." });

    await openLive(`/dash/issues/${issue.identifier}`);
    await eventually(() => page.getByRole("heading", { level: 1 }).textContent()).toContain("Harden the password reset");
    await page.getByTestId("issue-body").getByRole("heading", { name: "Steps" }).waitFor();
    // The neighbourhood: the canceled blocker above, gated work below, the chain to the urgent one marked.
    const graph = page.getByRole("group", { name: /Dependency neighbourhood/ });
    for (const id of [audit.identifier, announce.identifier]) await graph.getByRole("link", { name: new RegExp(`^${id} `) }).waitFor();
    expect(await graph.locator("path[data-critical]").count()).toBe(1);
    await eventually(() => page.getByRole("complementary").textContent()).toContain(`inherits urgent from ${announce.identifier}`);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    const entries = page.getByTestId("activity-entry");
    for (const kind of ["created", "claimed", "heartbeat", "checkpoint", "commented"]) {
      await eventually(() => entries.and(page.locator(`[data-kind="${kind}"][data-runtime="codex"]`)).count()).toBe(1);
    }
    await eventually(() => entries.first().textContent()).toContain(world.keys.codex.slice(0, 12));
    await eventually(() => page.getByText("clock skew").count()).toBe(2); // timeline and activity detail

    // A person comments and the agent's lease is untouched; both show at once.
    await page.getByRole("textbox", { name: "Add a comment" }).fill("Please also log resets.");
    await page.getByRole("button", { name: "Comment" }).click();
    await page.getByText("Comment added.").waitFor();
    await eventually(() => entries.and(page.locator('[data-kind="commented"][data-runtime="dash"]')).count()).toBe(1);

    // The agent finishes over MCP; the open page follows.
    await callOk(agent, "release_issue", { identifier: issue.identifier, claimToken: claim.claimToken, note: "handing over" });
    await eventually(() => entries.and(page.locator('[data-kind="released"][data-runtime="codex"]')).count(), 2_000).toBe(1);
    expect(await stillSameDocument()).toBe(true);

    // Reprioritize as the owner: the same save_issue, recorded with runtime dash.
    await page.getByLabel("Priority", { exact: true }).selectOption("1");
    await page.getByRole("button", { name: "Reprioritize" }).click();
    await page.getByText("Priority changed.").waitFor();
    await page.getByText("Now urgent;").waitFor();
    await eventually(() => entries.first().getAttribute("data-kind")).toBe("updated");
    await eventually(() => entries.first().getAttribute("data-runtime")).toBe("dash");
    const queued = await callOk(agent, "get_issue", { identifier: issue.identifier });
    expect(queued.priority).toBe(1);
    await screenshot(page, "drilldown-laptop");
    await phoneScreenshot(page, "drilldown-phone");
  });

  test("an owner releases a stuck claim; the holder's token is refused after", async () => {
    const agent = await world.agent("claude-code");
    const issue = await callOk(agent, "save_issue", { title: "Stuck on a prompt", work: true, changeType: "feat", noDependency: "alone" });
    const claim = await callOk(agent, "claim_issue", { identifier: issue.identifier });
    await openLive(`/dash/issues/${issue.identifier}`);
    await page.getByLabel("Why take the claim back").fill("agent waits for a human answer");
    await page.getByRole("button", { name: "Release claim" }).click();
    // The page says the outcome either way; a refusal fails here with its own words.
    const outcome = page.getByText("Claim released: the issue is available again.").or(page.getByRole("alert"));
    await outcome.first().waitFor();
    expect(await outcome.first().textContent()).toBe("Claim released: the issue is available again.");
    const refused = await agent.callTool({ name: "heartbeat", arguments: { identifier: issue.identifier, claimToken: claim.claimToken } });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as { error: { code: string } }).error.code).toBe("STALE_CLAIM");
    await eventually(() => page.getByTestId("activity-entry").first().getAttribute("data-kind")).toBe("force_released");
  });

  test("creating an issue needs the same declarations as an agent's", async () => {
    await page.goto(`${world.main.url}/dash/issues/new`);
    await page.getByLabel("Title").fill("Document the reset flow");
    await page.getByRole("radio", { name: /^Work/ }).check();
    await page.getByRole("radio", { name: "Blocked by" }).check();
    await page.getByRole("button", { name: "Create issue" }).click();
    await eventually(() => page.getByRole("alert").textContent()).toContain("a dependency declaration is required");
    await page.getByRole("radio", { name: "No dependency, because" }).check();
    await page.getByLabel("Why it depends on nothing").fill("writing only");
    await page.getByLabel("Priority").selectOption("3");
    await page.getByRole("button", { name: "Create issue" }).click();
    await page.waitForURL(/\/dash\/issues\/RTSC-\d+$/);
    await eventually(() => page.getByRole("heading", { level: 1 }).textContent()).toContain("Document the reset flow");
    await eventually(() => page.getByTestId("activity-entry").first().getAttribute("data-runtime")).toBe("dash");
  });

  test("another org's issue is not found, and the keyboard reaches the Dash with visible focus", async () => {
    const response = await page.goto(`${world.main.url}/dash/issues/${world.otherOrgIssue}`);
    expect(response?.status()).toBe(404);
    await eventually(() => page.getByRole("heading", { level: 1 }).textContent()).toContain("not found");
    await eventually(() => page.getByText("Their secret plan").count()).toBe(0);

    await page.goto(`${world.main.url}/dash/queue`);
    await page.keyboard.press("Tab");
    const focused = () => page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const style = getComputedStyle(el);
      return { text: el.textContent?.trim(), outline: style.outlineStyle, shadow: style.boxShadow };
    });
    expect((await focused()).text).toBe("Skip to content");
    for (let i = 0; i < 12; i++) await page.keyboard.press("Tab");
    const onQueue = await focused();
    expect(onQueue.outline !== "none" || onQueue.shadow !== "none").toBe(true);
  });

  test("no page logged a console error", async () => {
    for (const path of ["/dash", "/dash/queue", "/dash/queue?tab=active&status=doing", `/dash/issues/${world.prefix}-1`, "/dash/issues/new", "/dash/settings/keys"]) {
      await page.goto(`${world.main.url}${path}`);
      await page.waitForLoadState("networkidle").catch(() => {});
    }
    // The 404 page of the tenant test answers 404 on purpose; Chromium reports that document load as an error line.
    const unexpected = consoleErrors.filter((e) => !e.includes(`/dash/issues/${world.otherOrgIssue}`));
    expect(unexpected).toEqual([]);
  });
});
