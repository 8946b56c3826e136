// `node --import ./server/testing/package-log.mjs …`: appends every package the process imports
// (a bare specifier, resolved through ESM) to the file RETASC_PACKAGE_LOG names, one per line.
// server/boot-packages.test.ts starts the app with it to see what its start loads.
import { register } from "node:module";

register("./package-log-hooks.mjs", import.meta.url, { data: { file: process.env.RETASC_PACKAGE_LOG } });
