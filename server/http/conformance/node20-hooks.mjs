// Module hooks for node20.mjs: `fs` imported by the conformance package resolves to fs plus a
// globSync that says what it needs.
const shim = new URL("./node20-fs.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/")) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
