/**
 * The Markdown renderer on hostile input at the body limit, beside an ordinary 10 KB body in
 * the same run: `npx tsx bench/markdown.ts`. For each input: the parser's own cost on this
 * thread (what every other request would wait if it rendered on the event loop), then the
 * render as the Dash does it (server/markdown: a worker thread, a time budget) while a loop of
 * HTTP requests to a server in this process measures how long another request waits meanwhile.
 * Target (docs/architecture.md): no other request waits 100 ms or more.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { MarkdownRenderer, RENDER_BUDGET_MS } from "../server/markdown/index.ts";
import { renderHtml } from "../server/markdown/render.ts";
import { hostileMarkdown, normalMarkdown } from "../server/markdown/samples.ts";
import { log, round } from "./lib/stats.ts";

export const WAIT_TARGET_MS = 100;

export interface MarkdownRow {
  input: string;
  chars: number;
  /** renderHtml on this thread. */
  onLoopMs: number;
  /** MarkdownRenderer.render, the Dash's path. */
  renderMs: number;
  /** false: the budget ran out and the page shows the text unrendered. */
  rendered: boolean;
  /** The slowest of the requests made while it rendered, and the event loop's longest delay. */
  longestWaitMs: number;
  loopDelayMaxMs: number;
  requests: number;
}

export interface MarkdownResult {
  budgetMs: number;
  /** The request loop for a second with nothing rendering (the baseline). */
  idle: { ms: number; longestWaitMs: number; loopDelayMaxMs: number; requests: number };
  normal: MarkdownRow;
  hostile: MarkdownRow[];
  worstRenderMs: number;
  longestWaitMs: number;
  pass: boolean;
}

export async function markdownBench(): Promise<MarkdownResult> {
  const server = http.createServer((_req, res) => res.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const renderer = new MarkdownRenderer();
  try {
    // Start the worker first: its start is not a render.
    await renderer.render("*warm*");
    // Requests to this process's server while `work` runs: the slowest, and the loop's longest delay.
    const whileRequesting = async <T>(work: () => Promise<T>) => {
      const delay = monitorEventLoopDelay({ resolution: 1 });
      let running = true;
      let longestWaitMs = 0;
      let requests = 0;
      const others = (async () => {
        while (running) {
          const at = performance.now();
          await (await fetch(url)).text();
          longestWaitMs = Math.max(longestWaitMs, performance.now() - at);
          requests++;
        }
      })();
      delay.enable();
      const at = performance.now();
      const value = await work();
      const ms = performance.now() - at;
      delay.disable();
      running = false;
      await others;
      return { value, waits: { ms, longestWaitMs, loopDelayMaxMs: delay.max / 1e6, requests } };
    };
    const row = async (input: string, source: string): Promise<MarkdownRow> => {
      const onLoop = performance.now();
      renderHtml(source);
      const onLoopMs = performance.now() - onLoop;
      const { value: html, waits: { ms: renderMs, ...waits } } = await whileRequesting(() => renderer.render(source));
      const rendered = !html.includes('data-markdown="plain"');
      log(`markdown ${input}: ${round(renderMs)} ms${rendered ? "" : " (budget ran out: shown as text)"}, longest other request ${round(waits.longestWaitMs)} ms`);
      return { input, chars: source.length, onLoopMs, renderMs, rendered, ...waits };
    };
    // The same requests with nothing rendering: what the machine's load alone costs them.
    const { waits: idle } = await whileRequesting(() => new Promise((resolve) => setTimeout(resolve, 1_000)));
    const normal = await row("normal 10 KB body", normalMarkdown());
    const hostile: MarkdownRow[] = [];
    for (const [name, source] of Object.entries(hostileMarkdown())) hostile.push(await row(name, source));
    const all = [normal, ...hostile];
    const longestWaitMs = Math.max(...all.map((r) => r.longestWaitMs));
    return {
      budgetMs: RENDER_BUDGET_MS,
      idle,
      normal,
      hostile,
      worstRenderMs: Math.max(...all.map((r) => r.renderMs)),
      longestWaitMs,
      pass: longestWaitMs < WAIT_TARGET_MS,
    };
  } finally {
    await renderer.close();
    await new Promise((resolve) => server.close(resolve));
  }
}

export function formatMarkdown(result: MarkdownResult): string {
  const header = ["input", "chars", "on the loop", "via worker", "shown", "longest other request", "loop delay max"];
  const body = [result.normal, ...result.hostile].map((r) => [
    r.input,
    String(r.chars),
    `${round(r.onLoopMs, 1)} ms`,
    `${round(r.renderMs, 1)} ms`,
    r.rendered ? "rendered" : "as text",
    `${round(r.longestWaitMs, 1)} ms (${r.requests} requests)`,
    `${round(r.loopDelayMaxMs, 1)} ms`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [
    `Markdown at the body limit (render budget ${result.budgetMs} ms):`,
    line(header),
    widths.map((w) => "-".repeat(w)).join("  "),
    ...body.map(line),
    `baseline, nothing rendering for ${round(result.idle.ms / 1000, 1)} s: longest request ${round(result.idle.longestWaitMs, 1)} ms ` +
      `(${result.idle.requests} requests), loop delay max ${round(result.idle.loopDelayMaxMs, 1)} ms`,
    `worst render ${round(result.worstRenderMs, 1)} ms; longest wait of another request ${round(result.longestWaitMs, 1)} ms ` +
      `(target < ${WAIT_TARGET_MS} ms): ${result.pass ? "PASS" : "FAIL"}`,
  ].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  markdownBench().then(
    (result) => process.stdout.write(`\n${formatMarkdown(result)}\n`),
    (error) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 2;
    },
  );
}
