#!/usr/bin/env node
// The `retasc` command line: see `retasc --help`.
import { main } from "../src/main.js";

process.exitCode = await main(process.argv.slice(2));
