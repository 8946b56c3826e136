/** Timing and summary helpers shared by the benchmarks. */

export async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - start };
}

/** Nearest-rank percentile of a sample (p in 0..100). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export interface Distribution {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export function distribution(samples: readonly number[]): Distribution {
  return { n: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99), max: Math.max(...samples) };
}

/** A deterministic PRNG (mulberry32) so every run seeds the same graph. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

export function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}
