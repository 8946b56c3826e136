// A Vitest reporter for scripts/test.mjs: writes which tests ran and which were skipped (file and
// full name), and each file's duration, to RETASC_SKIP_REPORT, so the runner can name every test
// that no run covered and the files that take the run's time.
import fs from "node:fs";
import path from "node:path";

export default class RunReporter {
  onTestRunEnd(testModules) {
    const out = process.env.RETASC_SKIP_REPORT;
    if (!out) return;
    const report = { ran: [], skipped: [], files: [] };
    for (const module of testModules) {
      const file = path.relative(process.cwd(), module.moduleId);
      // The file's whole time in its worker: its imports (collect) as well as its tests.
      const d = module.diagnostic();
      report.files.push({ file, seconds: (d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration) / 1000 });
      for (const test of module.children.allTests()) {
        const skipped = test.result().state === "skipped";
        report[skipped ? "skipped" : "ran"].push({ file, name: test.fullName, ...(skipped && test.result().note ? { note: test.result().note } : {}) });
      }
    }
    fs.writeFileSync(out, JSON.stringify(report));
  }
}
