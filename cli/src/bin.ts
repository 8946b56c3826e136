#!/usr/bin/env node
// The `retasc` command line: see `retasc --help`.
import { main } from "./main.ts";

process.exitCode = await main(process.argv.slice(2));
