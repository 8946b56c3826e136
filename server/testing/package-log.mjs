// `node --import ./server/testing/package-log.mjs …`: appends every package the process loads, by
// the specifier it was asked for, to the file RETASC_PACKAGE_LOG names, one per line: ESM imports
// through a resolve hook, CommonJS requires (createRequire, and packages' own) through Module._load.
// server/boot-packages.test.ts starts the app with it to see what its start loads.
import fs from "node:fs";
import Module, { register } from "node:module";

const file = process.env.RETASC_PACKAGE_LOG;
register("./package-log-hooks.mjs", import.meta.url, { data: { file } });

const load = Module._load;
Module._load = function loadLogged(request, ...rest) {
  if (file && !request.startsWith("node:") && /^[@a-z]/i.test(request)) fs.appendFileSync(file, `${request}\n`);
  return load.call(this, request, ...rest);
};
