// Runs @modelcontextprotocol/conformance on Node 20, which lacks fs.globSync (Node 22): the
// package imports it at load, though the server scenarios never call it. On Node 22+ this
// changes nothing.
import fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function") register("./node20-hooks.mjs", import.meta.url);
