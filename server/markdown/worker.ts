import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { renderHtml } from "./render.ts";

/**
 * The render worker's entry. index.ts imports this module dynamically, so in the app's server
 * bundle it is a chunk of its own and `import.meta.url` names that chunk (from source, this
 * file): the worker loads the renderer alone, not the whole app.
 */
export const workerUrl = import.meta.url;

export interface RenderRequest {
  id: number;
  source: string;
}
/** The first message is `{ ready: true }`, once the renderer is loaded; then one reply per request. */
export interface RenderReply {
  id: number;
  html: string;
}

if (!isMainThread && workerData?.retascMarkdown === true) {
  parentPort!.on("message", ({ id, source }: RenderRequest) => {
    parentPort!.postMessage({ id, html: renderHtml(source) } satisfies RenderReply);
  });
  parentPort!.postMessage({ ready: true });
}
