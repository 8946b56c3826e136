/**
 * `npm run bench:upload`: what one upload of an export to the Dash (`/dash/settings/transfer`)
 * costs the server, and whether other requests still get through (decision 037, issue 39). The
 * built app runs on PostgreSQL as its own process; four people, each the owner of an org made on
 * the Dash, upload:
 *
 * - a real export of about 32 MiB: an org of issues with bodies, comments and blocking chains,
 *   seeded in the database and written by the product's own export;
 * - crafted, tiny objects read through: the same header, then a 32 MiB field of `{}`s the
 *   import has no use for (so the reader scans all of it), then a small org's sections, on one
 *   line: the layout the old reader parsed whole;
 * - crafted, tiny objects in one record: a person record holding 32 MiB of `{}`s (refused once
 *   the record passes 200,000 values).
 *
 * Each alone, then four at once (IMPORT_UPLOADS_AT_ONCE=4, so all four are read). Meanwhile
 * another process fetches `/healthz` back to back (p50, p99, max of its latency) and the app's
 * resident memory is read from /proc every 20 ms (its peak over the level before). Not run in
 * CI; the figures go in bench/README.md.
 */
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { useBenchPostgres } from "./lib/postgres-env.ts";
import { distribution, log, round } from "./lib/stats.ts";

useBenchPostgres();
const { createTestDatabase, servicesFor } = await import("../server/testing/db.ts");
const { residentBytes, startApp } = await import("../server/testing/app-process.ts");
const { signUpOverHttp } = await import("../server/testing/dash.ts");
const { seedGraph } = await import("./lib/seed.ts");
const { seedOrg } = await import("../server/testing/fixtures.ts");
const { comments, issues } = await import("../db/schema/index.ts");
const { systemPrincipal } = await import("../server/context.ts");
const { withPrincipal } = await import("../server/with-principal.ts");
const { exportOrg } = await import("../server/transfer/export.ts");
const { UPLOAD_MAX_BYTES } = await import("../server/transfer/import.ts");
const { eq } = await import("drizzle-orm");
type Services = import("../server/context.ts").Services;

const MB = 1024 * 1024;
/** The probe: fetches the URL back to back until its stdin closes, then prints the latencies (ms) as JSON. */
const PROBE = `
const latencies = [];
let running = true;
process.stdin.on("end", () => (running = false)).resume();
(async () => {
  while (running) {
    const started = performance.now();
    await fetch(process.argv[1]).then((r) => r.arrayBuffer());
    latencies.push(performance.now() - started);
  }
  process.stdout.write(JSON.stringify(latencies));
})();
`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "retasc-bench-upload-"));

/** An org of `size` issues: a body, a comment, every fifth blocking the next (as bench/export.ts seeds). */
async function seedIssues(services: Services, size: number, prefix: string) {
  const org = await seedOrg(services, { prefix, name: `Upload ${prefix}` });
  const now = new Date();
  const graph = {
    issues: Array.from({ length: size }, (_, i) => ({
      title: `Issue ${i + 1}: a title of ordinary length for a tracker`,
      priority: i % 5,
      dueAt: i % 10 === 0 ? new Date(now.getTime() + 30 * 86_400_000) : null,
      assigneeId: null,
      createdAt: new Date(now.getTime() - (size - i) * 1000),
    })),
    edges: Array.from({ length: Math.floor(size / 5) }, (_, k): [number, number] => [k * 5, k * 5 + 1]),
  };
  const seeded = await seedGraph(services, { orgId: org.orgId, projectId: org.projectId, prefix, authorId: org.agents.alice.userId }, graph, now);
  const cipher = await services.keyring.forOrg(services.db, org.orgId);
  const body = cipher.encrypt("A body of a few sentences, with `code`, a [link](https://example.com) and a list:\n\n- one\n- two\n\n".repeat(6));
  for (let at = 0; at < seeded.length; at += 1000) {
    const chunk = seeded.slice(at, at + 1000);
    await services.db.transaction(async (tx) => {
      for (const s of chunk) await tx.update(issues).set({ bodyEnc: body }).where(eq(issues.id, s.id));
    });
    await services.db.insert(comments).values(
      chunk.map((s) => ({ id: crypto.randomUUID(), orgId: org.orgId, issueId: s.id, authorId: org.agents.alice.userId, bodyEnc: cipher.encrypt(`A comment on ${s.identifier}, long enough to be a real one.`)!, createdAt: s.createdAt })),
    );
  }
  return org.orgId;
}

async function exportFile(services: Services, orgId: string, name: string): Promise<string> {
  const file = path.join(dir, name);
  const out = fs.createWriteStream(file);
  for await (const chunk of (await exportOrg(withPrincipal(services, systemPrincipal(orgId)), { format: "json" })).chunks) {
    if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  return file;
}

const database = await createTestDatabase({ max: 4 });
const services = servicesFor(database.database);
const app = await startApp({ DATABASE_URL: database.url!, RETASC_MASTER_KEY: crypto.randomBytes(32).toString("base64"), RETASC_EMAIL_PASSWORD: "on", IMPORT_UPLOADS_AT_ONCE: "4", LOG_LEVEL: "silent" }, { timeoutMs: 180_000 });
try {
  // A real export just under the upload limit: the size per issue from 1,000, then the org that fills 32 MiB.
  log("seeding and exporting the real org");
  const small = await exportFile(services, await seedIssues(services, 1_000, "SML"), "small.json");
  const perIssue = fs.statSync(small).size / 1_000;
  const real = await exportFile(services, await seedIssues(services, Math.floor((UPLOAD_MAX_BYTES * 0.97) / perIssue), "REAL"), "real.json");
  const smallText = fs.readFileSync(small, "utf8");
  const headerLine = smallText.slice(0, smallText.indexOf("\n") + 1);
  const rest = smallText.slice(headerLine.length);
  const fill = (room: number) => "{},".repeat(Math.floor(room / 3));
  const throughPad = fill(UPLOAD_MAX_BYTES - smallText.length - 64);
  const through = path.join(dir, "crafted-through.json");
  fs.writeFileSync(through, `${headerLine.replaceAll("\n", "")}"padding":[${throughPad}{}],${rest.replaceAll("\n", "")}`);
  const person = '{"id":"p","email":"owner@example.com","name":"Owner","member":{"role":"owner","status":"active","since":"2026-01-01T00:00:00.000Z"},"x":[';
  const inRecord = path.join(dir, "crafted-record.json");
  fs.writeFileSync(inRecord, `${headerLine.replaceAll("\n", "")}"people":[${person}${fill(UPLOAD_MAX_BYTES - headerLine.length - person.length - 64)}{}]}]}`);
  const docs = { real, "crafted: tiny objects read through": through, "crafted: tiny objects in one record": inRecord };
  for (const [name, file] of Object.entries(docs)) log(`${name}: ${round(fs.statSync(file).size / MB, 1)} MiB`);

  const owners: string[] = [];
  for (let i = 0; i < 4; i++) {
    const email = `uploader-${i}-${crypto.randomBytes(3).toString("hex")}@example.com`;
    const { cookie } = await signUpOverHttp(app.url, email, `Uploader ${i}`);
    const made = await fetch(`${app.url}/dash/orgs/new`, { method: "POST", redirect: "manual", headers: { cookie, origin: app.url, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ name: `Uploader ${i}` }) });
    const org = made.headers.getSetCookie().map((c) => c.split(";")[0]!).find((c) => c.startsWith("retasc_org="));
    owners.push(`${cookie}; ${org}`);
  }

  const upload = async (cookie: string, file: string, orgName: string) => {
    const form = new FormData();
    form.set("orgName", orgName);
    form.set("file", new Blob([fs.readFileSync(file)], { type: "application/json" }), "export.json");
    const started = performance.now();
    const response = await fetch(`${app.url}/dash/settings/transfer`, { method: "POST", redirect: "manual", headers: { cookie, origin: app.url }, body: form });
    const html = await response.text();
    const alert = /role="alert"[^>]*><p class="font-medium">([^<]*)<\/p>/.exec(html.replaceAll("<!-- -->", ""))?.[1];
    return { seconds: round((performance.now() - started) / 1000, 1), outcome: response.status === 302 ? "imported" : `refused: ${alert?.slice(0, 90) ?? response.status}` };
  };

  /**
   * Runs `work` while /healthz is fetched back to back by a process of its own (so what this one
   * does, four 32 MiB uploads, never delays the probe) and the app's RSS is sampled.
   */
  const measured = async <T>(work: () => Promise<T>) => {
    await new Promise((r) => setTimeout(r, 2000));
    const pid = app.child.pid!;
    const before = residentBytes(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, residentBytes(pid))), 20);
    const probe = spawn(process.execPath, ["-e", PROBE, `${app.url}/healthz`], { stdio: ["pipe", "pipe", "inherit"] });
    let printed = "";
    probe.stdout.on("data", (d) => (printed += d));
    const probed = new Promise<number[]>((resolve) => probe.on("exit", () => resolve(JSON.parse(printed) as number[])));
    await new Promise((r) => setTimeout(r, 200));
    const value = await work();
    probe.stdin.end();
    const latencies = await probed;
    clearInterval(sampler);
    const healthz = distribution(latencies);
    return { value, rssBeforeMb: round(before / MB, 0), rssPeakMb: round(peak / MB, 0), rssGrowthMb: round((peak - before) / MB, 0), healthz: { n: healthz.n, p50: round(healthz.p50, 1), p99: round(healthz.p99, 1), max: round(healthz.max, 1) } };
  };

  // Warm-up: the import's code paths compiled, the pools open.
  await upload(owners[0]!, small, "warm-up");
  const results = [];
  for (const [name, file] of Object.entries(docs)) {
    const alone = await measured(() => upload(owners[0]!, file, `${name} alone`));
    log(`${name}, alone: ${alone.value.outcome} in ${alone.value.seconds} s; RSS ${alone.rssBeforeMb} → peak ${alone.rssPeakMb} MB (+${alone.rssGrowthMb}); /healthz p50 ${alone.healthz.p50} ms, p99 ${alone.healthz.p99} ms, max ${alone.healthz.max} ms (${alone.healthz.n} requests)`);
    const four = await measured(() => Promise.all(owners.map((cookie, i) => upload(cookie, file, `${name} ${i}`))));
    log(`${name}, four at once: ${four.value.map((v) => `${v.outcome} in ${v.seconds} s`).join("; ")}; RSS ${four.rssBeforeMb} → peak ${four.rssPeakMb} MB (+${four.rssGrowthMb}); /healthz p50 ${four.healthz.p50} ms, p99 ${four.healthz.p99} ms, max ${four.healthz.max} ms (${four.healthz.n} requests)`);
    results.push({ document: name, mib: round(fs.statSync(file).size / MB, 1), alone, four });
  }
  process.stdout.write(JSON.stringify({ benchmark: "upload", cpus: os.cpus().length, results }, null, 2) + "\n");
} finally {
  await app.stop();
  await database.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
