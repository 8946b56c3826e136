import { describe, expect, it } from "vitest";
import { findEntry, replacingEntry, withEntry } from "../src/toml-entry.ts";

/** The line edits `retasc setup` makes in Codex's config.toml (decision 088): every other line kept byte for byte. */
const launch = { command: "/usr/local/bin/retasc", args: ["mcp", "proxy"] };
const table = '[mcp_servers.retasc]\ncommand = "/usr/local/bin/retasc"\nargs = ["mcp", "proxy"]\n';

describe("Codex's [mcp_servers.retasc]", () => {
  it("is appended to an empty file, and to one without it, after a blank line", () => {
    expect(withEntry("", launch)).toBe(table);
    expect(withEntry('model = "o4"', launch)).toBe(`model = "o4"\n\n${table}`);
    expect(withEntry('model = "o4"\n', launch)).toBe(`model = "o4"\n\n${table}`);
  });

  it("is found in its quoted and spaced forms, with its sub-tables, and not inside a multi-line string", () => {
    const text = [
      'notes = """',
      "[mcp_servers.retasc]",
      '"""',
      "[ mcp_servers . \"retasc\" ]  # ours",
      "command = 'retasc'",
      'args = [ "mcp" , "proxy" ]',
      "startup_timeout_sec = 20",
      "",
      "[mcp_servers.retasc.env]",
      'LOG = "1"',
      "",
      "[profiles.fast]",
      'model = "o4-mini"',
    ].join("\n");
    expect(findEntry(text)).toMatchObject({ kind: "table", start: 3, end: 10, command: "retasc", args: ["mcp", "proxy"], commandLine: 4, argsLine: 5 });
    // Only the two lines change; its comment, other keys and sub-table stay.
    const edited = withEntry(text, launch)!;
    expect(edited.split("\n")).toEqual(text.split("\n").map((line, i) => (i === 4 ? 'command = "/usr/local/bin/retasc"' : i === 5 ? 'args = ["mcp", "proxy"]' : line)));
    // Replacing takes the table and its sub-tables, and nothing after them.
    expect(replacingEntry(text, launch)).toBe([...text.split("\n").slice(0, 3), ...table.trimEnd().split("\n"), "", "[profiles.fast]", 'model = "o4-mini"'].join("\n"));
  });

  it("rewrites the whole table when its args span lines, and leaves a server written in another form", () => {
    const multi = '[mcp_servers.retasc]\ncommand = "retasc"\nargs = [\n  "mcp",\n  "proxy",\n]\n';
    expect(findEntry(multi)).toMatchObject({ kind: "table", args: null });
    expect(withEntry(multi, launch)).toBe(table);
    for (const other of ['[mcp_servers]\nretasc = { command = "retasc", args = ["mcp", "proxy"] }\n', 'mcp_servers.retasc.command = "retasc"\n', 'mcp_servers = { retasc = { url = "https://x" } }\n']) {
      expect(findEntry(other).kind).toBe("other");
      expect(withEntry(other, launch)).toBeNull();
      expect(replacingEntry(other, launch)).toBeNull();
    }
    // Another server whose name starts the same is not ours.
    expect(findEntry('[mcp_servers.retasc-old]\ncommand = "x"\n')).toEqual({ kind: "none" });
  });
});
