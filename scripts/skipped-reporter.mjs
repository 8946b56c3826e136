// A Vitest reporter for scripts/test.mjs: writes which tests ran and which were skipped (file and
// full name) to RETASC_SKIP_REPORT, so the runner can name every test that no run covered.
import fs from "node:fs";
import path from "node:path";

export default class SkippedReporter {
  onTestRunEnd(testModules) {
    const out = process.env.RETASC_SKIP_REPORT;
    if (!out) return;
    const report = { ran: [], skipped: [] };
    for (const module of testModules) {
      const file = path.relative(process.cwd(), module.moduleId);
      for (const test of module.children.allTests()) {
        const skipped = test.result().state === "skipped";
        report[skipped ? "skipped" : "ran"].push({ file, name: test.fullName, ...(skipped && test.result().note ? { note: test.result().note } : {}) });
      }
    }
    fs.writeFileSync(out, JSON.stringify(report));
  }
}
