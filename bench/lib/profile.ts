/**
 * A V8 CPU profile's self time by layer (issue 30, decision 111), in microseconds per unit of
 * work (a claim + finish): each sample goes to the package or folder of the app its innermost
 * function is in; a sample in Node's own code or in native code (a socket write, a cipher, JSON)
 * goes to the nearest caller outside them, so it counts to who asked for it (Node's internals
 * only when nothing else is on the stack: the event loop, timers). Then the costliest functions
 * by self time. The profiler samples the thread's wall time, so on a loaded machine a frame that
 * was preempted (a socket write waking PostgreSQL) is counted for the time it waited.
 */
interface ProfileNode {
  parent?: ProfileNode;
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

const LAYERS: [RegExp, string][] = [
  [/node_modules\/drizzle-orm\//, "drizzle-orm (query building, row mapping)"],
  [/node_modules\/postgres\//, "postgres.js (protocol, row parsing)"],
  [/node_modules\/zod\//, "zod (input parsing)"],
  [/node_modules\/pg-boss\/|node_modules\/pg\//, "pg-boss / pg"],
  [/node_modules\/tsx\/|node_modules\/esbuild/, "tsx loader"],
  [/node_modules\//, "other packages"],
  [/\/server\/metrics\//, "server/metrics"],
  [/\/server\/crypto\//, "server/crypto (token hash, title decrypt)"],
  [/\/server\/issues\/views\.ts|\/server\/issues\/store\.ts|\/server\/queue\/claim-discussion\.ts/, "server/issues views and rows (reply rendering)"],
  [/\/server\/issues\/(batching|hot-batch)\.ts/, "server/issues/batching.ts and hot-batch.ts"],
  [/\/server\/(queue|issues)\//, "server/queue and server/issues (other)"],
  [/\/server\//, "server (other)"],
  [/\/db\//, "db"],
  [/\/bench\//, "bench"],
];

const NODE_INTERNALS = "Node internals (event loop, timers, streams)";

function layerOf(node: ProfileNode): string {
  const { functionName } = node.callFrame;
  if (functionName === "(garbage collector)") return "(garbage collector)";
  if (functionName === "(idle)") return "(idle)";
  if (functionName === "(program)") return "(program: V8 outside JS)";
  // Native code and Node's own modules count to their nearest caller outside them.
  let frame: ProfileNode | undefined = node;
  while (frame && (frame.callFrame.url === "" || frame.callFrame.url.startsWith("node:"))) frame = frame.parent;
  if (!frame) return NODE_INTERNALS;
  for (const [pattern, name] of LAYERS) if (pattern.test(frame.callFrame.url)) return name;
  return "other";
}

/** Lines of a table: self time per unit by layer (idle left out), then the top functions. */
export function profileByLayer(profile: CpuProfile, units: number, top = 25): string[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  for (const node of profile.nodes) for (const child of node.children ?? []) byId.get(child)!.parent = node;
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let k = 0; k < samples.length; k++) {
    // timeDeltas[k+1] is how long sample k lasted.
    const us = deltas[k + 1] ?? 0;
    selfUs.set(samples[k]!, (selfUs.get(samples[k]!) ?? 0) + us);
  }
  const layers = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const layer = layerOf(node);
    if (layer === "(idle)") continue;
    busy += us;
    layers.set(layer, (layers.get(layer) ?? 0) + us);
    const where = node.callFrame.url.replace(/^.*\/(node_modules\/|work\/[^/]+\/)/, "");
    const name = `${node.callFrame.functionName || "(anonymous)"} ${where}:${node.callFrame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
  }
  const per = (us: number) => `${(us / units).toFixed(1).padStart(7)} us`;
  const lines = [`busy (not idle): ${per(busy)} per unit`];
  for (const [layer, us] of [...layers].sort((a, b) => b[1] - a[1])) lines.push(`${per(us)}  ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${layer}`);
  lines.push(`top functions by self time:`);
  for (const [name, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`${per(us)}  ${name}`);
  return lines;
}
