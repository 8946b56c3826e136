// The resolve hook of package-log.mjs, on Node's loader thread.
import fs from "node:fs";

let file;
export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (file && !specifier.startsWith("node:") && /^[@a-z]/i.test(specifier)) fs.appendFileSync(file, `${specifier}\n`);
  return resolved;
}
