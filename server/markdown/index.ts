import { Worker } from "node:worker_threads";
import { BODY_MAX_CHARS } from "../issues/schemas.ts";
import type { RenderReply } from "./worker.ts";

/**
 * Markdown rendering off the event loop. Every source goes to one worker thread, one at a
 * time, so a hostile body costs its page a bounded wait and every other request nothing:
 * a render that runs past `budgetMs` is cut (the worker is terminated and started afresh),
 * a source that waits past `waitMs` for its turn is not rendered, and a source longer than
 * the body limit never is; each of those is shown as escaped plain text instead.
 */

/** The longest source rendered: the issue body limit. */
export const MAX_SOURCE = BODY_MAX_CHARS;
export const RENDER_BUDGET_MS = 1_000;
export const RENDER_WAIT_MS = 5_000;

interface Task {
  id: number;
  source: string;
  resolve(html: string): void;
  timer: NodeJS.Timeout;
  /** Handed to the worker (its budget runs). */
  sent: boolean;
}

export class MarkdownRenderer {
  private worker: Promise<Worker> | null = null;
  private readonly queue: Task[] = [];
  private current: Task | null = null;
  private nextId = 0;

  constructor(private readonly limits: { budgetMs: number; waitMs: number } = { budgetMs: RENDER_BUDGET_MS, waitMs: RENDER_WAIT_MS }) {}

  /** The source as HTML safe to show ("" for none); never rejects. */
  render(source: string | null | undefined): Promise<string> {
    if (!source) return Promise.resolve("");
    if (source.length > MAX_SOURCE) return Promise.resolve(plainText(source));
    return new Promise((resolve) => {
      // The timers are not unref'd: they keep a script alive until its renders settle.
      const task: Task = { id: ++this.nextId, source, resolve, sent: false, timer: setTimeout(() => this.expire(task), this.limits.waitMs) };
      this.queue.push(task);
      this.pump();
    });
  }

  /** Stops the worker (it never holds the process open; this is for tidy shutdowns and tests). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await (await worker?.catch(() => null))?.terminate();
  }

  private pump() {
    if (this.current || this.queue.length === 0) return;
    const task = this.queue.shift()!;
    this.current = task;
    this.spawn().then(
      (worker) => {
        if (this.current !== task) return;
        clearTimeout(task.timer);
        task.timer = setTimeout(() => this.expire(task), this.limits.budgetMs);
        task.sent = true;
        worker.postMessage({ id: task.id, source: task.source });
      },
      () => this.finish(task, plainText(task.source)),
    );
  }

  private spawn(): Promise<Worker> {
    if (this.worker) return this.worker;
    const started: Promise<Worker> = import("./worker.ts").then(
      ({ workerUrl }) =>
        new Promise((resolve, reject) => {
          const options = { workerData: { retascMarkdown: true }, resourceLimits: { maxOldGenerationSizeMb: 256 } };
          const worker = workerUrl.endsWith(".ts")
            ? // From source (tests, scripts) the entry is TypeScript, and Node 20 hands a worker no --import loader: it registers tsx itself.
              new Worker(`import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(workerUrl)}); })`, { ...options, eval: true })
            : new Worker(new URL(workerUrl), options);
          worker.on("message", (reply: RenderReply | { ready: true }) => {
            // The entry says when it is loaded, so no render's budget pays for the start.
            if ("ready" in reply) resolve(worker);
            else if (this.current?.id === reply.id) this.finish(this.current, reply.html);
          });
          // A crash (out of memory, say) costs the render in flight its Markdown, not the page.
          worker.on("error", () => {});
          worker.on("exit", () => {
            reject(new Error("the Markdown worker exited"));
            if (this.worker !== started) return;
            this.worker = null;
            if (this.current?.sent) this.finish(this.current, plainText(this.current.source));
          });
          // After the listeners, which would hold the process open again.
          worker.unref();
        }),
    );
    this.worker = started;
    started.catch(() => {
      if (this.worker === started) this.worker = null;
    });
    return started;
  }

  private expire(task: Task) {
    if (this.current === task) {
      if (task.sent) void this.close();
      this.finish(task, plainText(task.source));
      return;
    }
    this.queue.splice(this.queue.indexOf(task), 1);
    task.resolve(plainText(task.source));
  }

  private finish(task: Task, html: string) {
    clearTimeout(task.timer);
    if (this.current === task) this.current = null;
    task.resolve(html);
    this.pump();
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** What a page shows when a source is not rendered: its text, escaped, line breaks kept. */
export function plainText(source: string): string {
  return `<p class="whitespace-pre-wrap" data-markdown="plain">${source.replace(/[&<>"']/g, (c) => ESCAPES[c]!)}</p>`;
}

/** The app's renderer: one worker for the process, started on first use. */
export const markdown = new MarkdownRenderer();
