/**
 * /healthz while the largest replies are read (issue 37 point 3: a 100 ms budget): the built app
 * on PostgreSQL, an org with one issue of 800 comments of 50,000 characters (finding 6's thread)
 * and 250 people and 200 invites; eight readers in a tight loop, each on one of the largest
 * pages (list_comments pages of the long thread over /mcp, its Dash issue page, list_members
 * over /mcp, the Dash Members page), two readers a page, then eight on each page alone, while
 * /healthz is probed every 50 ms; beside the same probes with no reads, in the same run. All of it
 * twice: on an instance without the heavy reads' limit (HEAVY_READS_AT_ONCE past the readers, the
 * baseline) and on one with it as deployed (decision 058), on the same database:
 * `npm run bench:healthz -- [--quick] [--seconds N] [--at-once N]`.
 */
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { wholeNumberOption } from "./lib/args.ts";
import { startDashBenchApp } from "./lib/dash-app.ts";
import { distribution, log, round, type Distribution } from "./lib/stats.ts";

export const HEALTHZ_TARGET_MS = 100;
const READERS = 8;

export async function healthzUnderReadsBench(options: { comments: number; chars: number; seconds: number; atOnce: number }) {
  const bench = await startDashBenchApp({ HEAVY_READS_AT_ONCE: "1000" });
  const { services, cookie } = bench;
  let app: { url: string } = bench.app;
  try {
    const { seedOwnedOrg } = await import("../server/testing/dash.ts");
    const { addPeople } = await import("../server/orgs/testing.ts");
    const { humanCtx } = await import("../server/orgs/access.ts");
    const { createInvite } = await import("../server/orgs/invites.ts");
    const org = await seedOwnedOrg(services.db, services.keyring, { ownerEmail: "bench@example.com", orgName: "Bench", prefix: "HZ", runtimes: ["claude-code"] });
    const key = org.keys["claude-code"];

    /** One tools/call over /mcp (stateless JSON-RPC), timed to the last byte. */
    const call = async (name: string, args: Record<string, unknown>) => {
      const start = performance.now();
      const response = await fetch(`${app.url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
      });
      const text = await response.text();
      const content = JSON.parse(text).result?.structuredContent;
      if (!content || JSON.parse(text).result?.isError) throw new Error(`${name} answered ${response.status}: ${text.slice(0, 500)}`);
      return { ms: performance.now() - start, bytes: Buffer.byteLength(text), content };
    };
    const page = async (pathname: string) => {
      const start = performance.now();
      const response = await fetch(`${app.url}${pathname}`, { headers: { cookie } });
      const body = await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`${pathname}: ${response.status}`);
      return { ms: performance.now() - start, bytes: body.byteLength };
    };

    log(`seeding ${options.comments} comments of ${options.chars} characters, 250 people, 200 invites`);
    const { identifier } = (await call("save_issue", { title: "A long thread", work: true, changeType: "feat", noDependency: "bench" })).content as { identifier: string };
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < options.comments; i = next++) {
          await call("save_comment", { issue: identifier, body: `${String(i).padStart(4, "0")} ${"x".repeat(options.chars - 5)}` });
        }
      }),
    );
    await addPeople(services.db, org.orgId, 250, "reader");
    const owner = (await humanCtx(services, { orgId: org.orgId, userId: org.ownerId, runtime: "dash" })).ctx;
    for (let i = 0; i < 200; i++) await createInvite(owner, { email: `invitee-${i}@example.com` });

    // The largest page of each kind: list_comments walks the thread's pages in turn.
    let cursor: string | undefined;
    const reads = {
      "list_comments (MCP)": async () => {
        const r = await call("list_comments", { issue: identifier, ...(cursor ? { cursor } : {}) });
        cursor = (r.content as { nextCursor?: string }).nextCursor;
        return r;
      },
      "Dash issue page": () => page(`/dash/issues/${identifier}`),
      "list_members (MCP)": () => call("list_members", {}),
      "Dash Members page": () => page("/dash/settings/members"),
    };
    const kinds = Object.keys(reads) as (keyof typeof reads)[];

    // Each page alone, one at a time: what one read costs.
    const alone = {} as Record<keyof typeof reads, Distribution & { kib: number }>;
    for (const kind of kinds) {
      const samples: number[] = [];
      let bytes = 0;
      for (let i = 0; i < 12; i++) {
        const r = await reads[kind]();
        if (i >= 2) samples.push(r.ms);
        bytes = Math.max(bytes, r.bytes);
      }
      alone[kind] = { ...distribution(samples), kib: bytes / 1024 };
    }

    const probe = async (seconds: number) => {
      const latencies: number[] = [];
      const until = Date.now() + seconds * 1000;
      while (Date.now() < until) {
        const start = performance.now();
        const response = await fetch(`${app.url}/healthz`);
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`/healthz: ${response.status}`);
        latencies.push(performance.now() - start);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return latencies;
    };

    /** /healthz with no reads, under the mixed readers, then under each kind alone, on the app at `app.url`. */
    const phases = async (name: string) => {
      log(`${name}: probing /healthz for ${options.seconds} s with no reads`);
      const quiet = distribution(await probe(options.seconds));
      log(`${name}: probing /healthz for ${options.seconds} s under ${READERS} readers of the four pages`);
      const mixed = await underReads((r) => kinds[r % kinds.length]!);
      const byKind = {} as Record<keyof typeof reads, Awaited<ReturnType<typeof underReads>>>;
      for (const kind of kinds) {
        log(`${name}: probing /healthz for ${options.seconds} s under ${READERS} readers of ${kind}`);
        byKind[kind] = await underReads(() => kind);
      }
      return { quiet, mixed, byKind };
    };
    /** /healthz while READERS read in a tight loop, reader r the page `pick(r)`. */
    const underReads = async (pick: (r: number) => keyof typeof reads) => {
      let reading = true;
      let served = 0;
      const readers = Array.from({ length: READERS }, async (_, r) => {
        const read = reads[pick(r)];
        while (reading) {
          await read();
          served++;
        }
      });
      const healthz = distribution(await probe(options.seconds));
      reading = false;
      await Promise.all(readers);
      return { healthz, readsPerSecond: served / options.seconds };
    };
    const unlimited = await phases("no limit");
    log(`starting an instance with HEAVY_READS_AT_ONCE=${options.atOnce}`);
    app = await bench.another({ HEAVY_READS_AT_ONCE: String(options.atOnce) });
    const limited = await phases(`limit ${options.atOnce}`);
    return {
      comments: options.comments,
      chars: options.chars,
      seconds: options.seconds,
      atOnce: options.atOnce,
      alone,
      unlimited,
      limited,
      pass: limited.mixed.healthz.p99 < HEALTHZ_TARGET_MS,
      loadAverage: os.loadavg()[0]!,
    };
  } finally {
    await bench.close();
  }
}
export type HealthzUnderReadsResult = Awaited<ReturnType<typeof healthzUnderReadsBench>>;

export function formatHealthzUnderReads(result: HealthzUnderReadsResult): string {
  const ms = (d: Distribution) => `p50 ${String(round(d.p50, 1)).padStart(6)} ms  p99 ${String(round(d.p99, 1)).padStart(6)} ms  max ${String(round(d.max, 1)).padStart(6)} ms`;
  type Phases = HealthzUnderReadsResult["limited"];
  const under = (name: string, u: Phases["mixed"], base: Phases["mixed"] | null) =>
    `    ${name.padEnd(22)} ${ms(u.healthz)}  (${u.healthz.n} probes, ${round(u.readsPerSecond, 1)} reads/s` +
    (base ? `; p50 ${round(u.healthz.p50 / base.healthz.p50, 2)}x, p99 ${round(u.healthz.p99 / base.healthz.p99, 2)}x without the limit)` : ")");
  const phases = (title: string, p: Phases, base: Phases | null) => [
    `  /healthz ${title}:`,
    `    ${"no reads".padEnd(22)} ${ms(p.quiet)}  (${p.quiet.n} probes)`,
    under(`${READERS} readers, mixed`, p.mixed, base?.mixed ?? null),
    ...Object.entries(p.byKind).map(([kind, u]) => under(`${READERS} readers, ${kind.replace(/ \(MCP\)| page/, "")}`, u, base?.byKind[kind as keyof Phases["byKind"]] ?? null)),
  ];
  return [
    `/healthz under the largest reads: ${result.comments} comments of ${result.chars} characters, 250 people, 200 invites; ${result.seconds} s of probes each`,
    "  each page alone, one read at a time:",
    ...Object.entries(result.alone).map(([kind, d]) => `    ${kind.padEnd(22)} ${ms(d)}  (${Math.round(d.kib)} KiB)`),
    ...phases("without the limit (baseline)", result.unlimited, null),
    ...phases(`with HEAVY_READS_AT_ONCE=${result.atOnce}`, result.limited, result.unlimited),
    `  target: /healthz p99 < ${HEALTHZ_TARGET_MS} ms under the mixed reads with the limit: ${result.pass ? "PASS" : "FAIL"} (load average ${round(result.loadAverage, 1)} on ${os.cpus().length} cores)`,
  ].join("\n");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes("--quick");
  healthzUnderReadsBench({ comments: quick ? 100 : 800, chars: 50_000, seconds: wholeNumberOption("seconds", quick ? 5 : 20), atOnce: wholeNumberOption("at-once", 2) })
    .then((result) => {
      process.stdout.write(`\n${formatHealthzUnderReads(result)}\n`);
      process.exitCode = result.pass ? 0 : 1;
    })
    .catch((error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    });
}
