import crypto from "node:crypto";

/**
 * The seeds each fuzzer runs, so that what a fuzzer once found stays found: every seed it ever
 * failed on, kept here for good, then one fresh seed per run, printed. `FUZZ_SEED=<seed>` runs
 * that one alone. When a run fails it names its seed and the single request that failed: add the
 * seed to its list here, and make the request a plain test in fuzz/regressions.test.ts.
 */
const failedSeeds = {
  // POST /dash/switch-org with orgId=%00 answered 500 (issue 37, finding 9).
  // 1927343001: a picker search longer than findPeople takes (?q= of 500 characters) failed the billing and connectors pages with a 500.
  forms: [1111086541, 1927343001],
  mcp: [],
  // An unknown connector id decoding to a NUL or a lone surrogate is refused 400 at the edge; the fuzzer expected 404 (its own expectation was wrong).
  "webhooks-intake": [1007796538],
  "webhooks-notify": [],
} satisfies Record<string, number[]>;

export type Fuzzer = keyof typeof failedSeeds;

export function fuzzSeeds(fuzzer: Fuzzer): number[] {
  if (process.env.FUZZ_SEED) {
    process.stderr.write(`${fuzzer} fuzz: seed ${process.env.FUZZ_SEED} (FUZZ_SEED)\n`);
    return [Number(process.env.FUZZ_SEED)];
  }
  const fresh = crypto.randomInt(2 ** 31);
  const kept: number[] = failedSeeds[fuzzer];
  process.stderr.write(`${fuzzer} fuzz: seeds ${[...kept, fresh].join(", ")} (the last is this run's fresh one; FUZZ_SEED=<seed> reruns one)\n`);
  return [...kept, fresh];
}

/**
 * What to report when a batch of concurrent requests had problems: each request that had one is
 * sent again alone, and the first that fails by itself is named with the seed. One that fails
 * only among the others is named as such, with its batch's problems.
 */
export async function isolateFailure<Shot>(seed: number, failing: { shot: Shot; problems: string[] }[], fire: (shot: Shot) => Promise<string[]>): Promise<string> {
  for (const { shot } of failing) {
    const alone = await fire(shot);
    if (alone.length > 0) return `seed ${seed}: the single request that fails: ${alone[0]}`;
  }
  return `seed ${seed}: these requests failed only together with the rest of their batch: ${failing.flatMap((f) => f.problems).join("; ")}`;
}
