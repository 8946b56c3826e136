/**
 * `npm run bench:notify -- [--events N] [--rate N]`: notifications under load. N issue changes
 * (a cancel, which tells the author) at a fixed rate, each fanned out to the author's three
 * channels (Telegram, Slack, Discord: local fakes over HTTP); the figure is the time from the
 * change's commit to the fake platform receiving each message, p50 / p99. Beside it, in the
 * same run and at the same rate, the baseline: the same changes for an author with no channel,
 * from commit to the outbox job's completion (the outbox and fan-out alone). Not in CI.
 */
import { sql } from "drizzle-orm";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { distribution, log, round } from "./lib/stats.ts";
import { wholeNumberOption } from "./lib/args.ts";

const option = (name: string, fallback: number) => wholeNumberOption(name, fallback);
const EVENTS = option("events", 1_000);
const RATE = option("rate", 100);

useBenchPostgres();
// Imported once the database is chosen: server/testing/db.ts reads it at import.
const { createTestDatabase, servicesFor, testConfig } = await import("../server/testing/db.ts");
const { seedOrg } = await import("../server/testing/fixtures.ts");
const { peopleOf } = await import("../server/orgs/testing.ts");
const { saveIssue } = await import("../server/issues/index.ts");
const { bindChannel } = await import("../server/notify/bindings.ts");
const { notifySlackInstalls } = await import("../db/schema/index.ts");
const { query } = await import("../db/client.ts");
const { createLogger } = await import("../server/log.ts");
const { startInlineRunner } = await import("../workers/inline.ts");
const { retascJobs } = await import("../workers/catalog.ts");
const { startFakeTelegram } = await import("../test/fakes/telegram.ts");
const { startFakeSlack } = await import("../test/fakes/slack.ts");
const { startFakeDiscord, dmChannelOf } = await import("../test/fakes/discord.ts");

const [telegram, slack, discord, tdb] = await Promise.all([startFakeTelegram(), startFakeSlack(), startFakeDiscord(), createTestDatabase({ max: 20 })]);
const services = servicesFor(tdb.database, {
  config: testConfig({
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_URL: telegram.url,
    SLACK_API_URL: slack.apiUrl,
    DISCORD_BOT_TOKEN: discord.botToken,
    DISCORD_API_URL: discord.apiUrl,
    JOB_CONCURRENCY: "32",
    OUTBOX_POLL_MS: "1000",
  }),
});
try {
  const org = await seedOrg(services, { prefix: "BEN" });
  const { as } = await peopleOf(services, org);
  const heard = org.agents.alice.userId;
  await services.db.insert(notifySlackInstalls).values({
    orgId: org.orgId,
    teamId: slack.teamId,
    botTokenEnc: (await services.keyring.forOrg(services.db, org.orgId)).encrypt(slack.botToken),
  });
  const owner = { orgId: org.orgId, userId: heard };
  await bindChannel(services, services.db, owner, "telegram", { chatId: "5001" });
  await bindChannel(services, services.db, owner, "slack", { teamId: slack.teamId, userId: "UBENCH" });
  await bindChannel(services, services.db, owner, "discord", { userId: "5002", channelId: dmChannelOf("5002") });

  log(`seeding ${EVENTS} issues by a person with three channels and ${EVENTS} by one with none`);
  const notified: string[] = [];
  const silent: string[] = [];
  for (let i = 0; i < EVENTS; i++) {
    notified.push((await saveIssue(org.agents.alice.ctx, { title: `Heard ${i}`, work: true, changeType: "feat", noDependency: "none" })).identifier);
    silent.push((await saveIssue(org.agents.carol.ctx, { title: `Silent ${i}`, work: true, changeType: "feat", noDependency: "none" })).identifier);
  }

  const log0 = createLogger("silent");
  const runner = await startInlineRunner({ services, database: tdb.database, log: log0, catalog: retascJobs, sweeps: [], exclusive: false });

  /** Cancels each identifier at RATE a second (bob acts, so the author is told); returns each change's commit time. */
  const changeAll = async (identifiers: string[]) => {
    const committed = new Map<string, number>();
    const start = performance.now();
    await Promise.all(
      identifiers.map(async (identifier, i) => {
        const due = start + (i * 1000) / RATE;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await saveIssue(as.bob, { identifier, status: "canceled", cancelReason: "bench" });
        committed.set(identifier, Date.now());
      }),
    );
    return committed;
  };
  const waitUntil = async (done: () => Promise<boolean> | boolean, what: string) => {
    const deadline = Date.now() + 300_000;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  log(`baseline: ${EVENTS} changes at ${RATE}/s for a person with no channel`);
  const baseStarted = Date.now();
  const baseCommitted = await changeAll(silent);
  await waitUntil(async () => (await query<{ n: number }>(services.db, sql`select count(*)::int as n from outbox where completed_at is null and failed_at is null`))[0]!.n === 0, "the baseline's jobs");
  const completions = await query<{ identifier: string; at: string }>(
    services.db,
    sql`select i.identifier, (extract(epoch from o.completed_at) * 1000)::bigint as at from outbox o join issues i on i.id = o.payload->>'issueId'
        where o.job = 'notify.issue_event' and o.created_at >= to_timestamp(${baseStarted / 1000}) and i.identifier like 'BEN-%'`,
  );
  const baseline = completions.filter((c) => baseCommitted.has(c.identifier)).map((c) => Number(c.at) - baseCommitted.get(c.identifier)!);

  log(`notifications: ${EVENTS} changes at ${RATE}/s, each to 3 channels`);
  const committed = await changeAll(notified);
  const expected = EVENTS * 3;
  const arrivals = () => [
    ...telegram.calls.filter((c) => c.method === "sendMessage").map((c) => ({ text: String(c.body.text), at: c.at })),
    ...slack.messages.map((m) => ({ text: m.text, at: m.at })),
    ...discord.messages.map((m) => ({ text: m.content, at: m.at })),
  ];
  await waitUntil(() => arrivals().length >= expected, `${expected} messages`);
  const latencies: number[] = [];
  for (const { text, at } of arrivals()) {
    const identifier = text.match(/(BEN-\d+) ·/)?.[1];
    const t0 = identifier ? committed.get(identifier) : undefined;
    if (t0 !== undefined) latencies.push(at - t0);
  }
  await runner.stop();

  const ours = distribution(latencies);
  const base = distribution(baseline);
  log(
    `change → platform receipt, ${EVENTS} events × 3 channels at ${RATE}/s: n ${ours.n}, p50 ${round(ours.p50, 0)} ms, p99 ${round(ours.p99, 0)} ms, max ${round(ours.max, 0)} ms`,
  );
  log(`baseline, change → outbox job done (no channel): n ${base.n}, p50 ${round(base.p50, 0)} ms, p99 ${round(base.p99, 0)} ms, max ${round(base.max, 0)} ms`);
  log(`p99 ratio ${round(ours.p99 / Math.max(1, base.p99), 2)}x; deliveries recorded: ${JSON.stringify(await query(services.db, sql`select state, count(*)::int as n from notify_deliveries group by state`))}`);
} finally {
  await Promise.all([telegram.close(), slack.close(), discord.close()]);
  await tdb.close();
}
