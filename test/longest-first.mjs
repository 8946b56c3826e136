// Vitest's file order for every run (vitest.config.ts, vitest.e2e.config.ts): the longest files
// first, by the seconds each took in a recorded `npm test` (test/durations.json), so two
// workers never end a stage with one long file running alone after everything else is done
// (decision 113). Vitest orders by its own cache of durations, which a fresh clone (CI) lacks, and
// otherwise by file size, which says little about time: the swarm, 5.9 KB, ran 93 s and started
// fifth of seven. Files not recorded (new ones) keep vitest's order, ahead of the recorded ones.
import fs from "node:fs";
import path from "node:path";
import { BaseSequencer } from "vitest/node";

export const durationsFile = path.resolve(import.meta.dirname, "durations.json");

/** The recorded seconds of each file for this run's driver: { postgres: {file: s}, pglite: {file: s} }. */
function recordedSeconds() {
  if (!fs.existsSync(durationsFile)) return {};
  const byDriver = JSON.parse(fs.readFileSync(durationsFile, "utf8"));
  const driver = process.env.RETASC_TEST_DRIVER === "pglite" ? "pglite" : "postgres";
  return byDriver[driver] ?? {};
}

export default class LongestFirst extends BaseSequencer {
  async sort(files) {
    const vitestOrder = await super.sort(files);
    const seconds = recordedSeconds();
    const root = this.ctx.config.root;
    const recorded = (spec) => seconds[path.relative(root, spec.moduleId)];
    const unknown = vitestOrder.filter((spec) => recorded(spec) === undefined);
    const known = vitestOrder.filter((spec) => recorded(spec) !== undefined).sort((a, b) => recorded(b) - recorded(a));
    return [...unknown, ...known];
  }
}
