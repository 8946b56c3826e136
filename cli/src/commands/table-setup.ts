import { type Command, command, url, json, yes, runtime, transport } from "../command.ts";
import { bind } from "./connect.ts";
import { init } from "./init.ts";
import { join } from "./join.ts";
import { config, doctor, login, logout, whoami } from "./session.ts";
import { update } from "./update.ts";
import { setup } from "./setup.ts";

/** The command table's part for signing in and wiring a folder: login, logout, whoami, doctor, update, config, setup, bind, join, init. */
export const setupCommands: Record<string, Command> = {
  login: command({
    summary: "sign in with a device code approved in the browser",
    usage: "retasc login [--github | --google] [--url <url>]",
    options: {
      github: { type: "boolean", description: "offer GitHub sign-in first on the approval page (remembered)" },
      google: { type: "boolean", description: "offer Google sign-in first on the approval page (remembered)" },
      url,
      json,
    },
    details: "Prints a URL and a code; open the URL, sign in, check the code and approve. The session is stored in ~/.retasc/config.json (mode 0600).",
    run: login,
  }),
  logout: command({ summary: "forget the session (agent keys stay)", usage: "retasc logout [--url <url>]", options: { url, json }, run: logout }),
  whoami: command({
    summary: "what this folder is bound to, and who is signed in",
    usage: "retasc whoami [--json]",
    options: { json, url },
    details: "The folder block is resolved by the server from the folder's key and needs no login.",
    run: whoami,
  }),
  doctor: command({ summary: "check this folder's wiring, key and server", usage: "retasc doctor [--json]", options: { json, url }, run: doctor }),
  update: command({
    summary: "install the newer CLI from the server this folder is bound to",
    usage: "retasc update [--url <url>] [--json]",
    options: { json, url },
    details:
      "Reads the server's /cli/latest.json and, when it serves a newer version than this one, runs npm install -g with its tarball. " +
      "The server is this folder's binding (from your keystore) or --url, never a cloned repository's .retasc.json alone.",
    run: update,
  }),
  config: command({ summary: "print the resolved paths, URLs and sign-in state", usage: "retasc config [--json]", options: { json, url }, run: config }),
  setup: command({
    summary: "wire the watchdog proxy into every agent harness on this machine (Claude Code, Codex, Cursor, OpenCode, Gemini CLI), once",
    usage: "retasc setup [--dry-run] [--replace] [--url <url>] [--json]",
    options: {
      "dry-run": { type: "boolean", description: "show what each file would get; write nothing" },
      replace: { type: "boolean", description: "also replace a retasc server that setup did not write (a URL, another command)" },
      url: { ...url, description: "the server whose CLI the entries run through npx when retasc is not installed (default: as for every command)" },
      json,
    },
    details:
      "Finds each harness by its config folder and adds an MCP server named retasc that runs `retasc mcp proxy` to its user-level file: " +
      "~/.claude.json (mcpServers; CLAUDE_CONFIG_DIR honoured), ~/.codex/config.toml ([mcp_servers.retasc]; CODEX_HOME honoured), ~/.cursor/mcp.json (mcpServers), " +
      "~/.config/opencode/opencode.json (mcp; XDG_CONFIG_HOME honoured) and ~/.gemini/settings.json (mcpServers). Every other key of those files is kept; " +
      "a file already wired is not touched, so running it again changes nothing. The entry holds no key, URL or folder: the proxy uses the key of the folder " +
      "the harness starts it in (~/.retasc), and in a folder that is not bound it answers without a key (setup_status only) and says to run `retasc bind`. " +
      "It runs retasc by its absolute path when installed, else the server's CLI through npx. `retasc bind` runs setup the first time; `retasc doctor` reports each harness. Restart a harness after it.",
    run: setup,
  }),
  bind: command({
    summary: "bind this folder: pick or create org and project, mint a key, wire the MCP client",
    usage: "retasc bind [--org-id <id> | --org-name <name>] [--project-id <id> | --project <name|PFX> [--prefix <PFX>]] [--runtime <label>] [-y]\n       retasc bind --setup rtscsetup_…",
    options: {
      "org-id": { type: "string", value: "<id>", description: "bind into this org" },
      "org-name": { type: "string", value: "<name>", description: "bind into the org of this name, creating it if you have none by that name" },
      "project-id": { type: "string", value: "<id>", description: "bind to this project" },
      project: { type: "string", value: "<name|PFX>", description: "the project of this prefix or name, created if missing" },
      prefix: { type: "string", value: "<PFX>", description: "issue prefix of a project created by --project (default: derived from its name)" },
      setup: { type: "string", value: "<code>", description: "a single-use setup code from the Dash: no login, no prompts" },
      runtime,
      transport,
      yes,
      url,
      json,
    },
    details:
      "Writes ./.mcp.json for Claude Code (it runs `retasc mcp proxy` through `npx -y <server>/cli/latest`, so a clone needs no install, or from PATH where the server serves no CLI; with --transport http it reads the key through `retasc mcp headers`) and ./.retasc.json (the deployment, org and project); neither holds a secret or anything of this machine, so both can be committed. The key stays in ~/.retasc/bindings.json. Prints config blocks for Codex, OpenCode, Cursor, Cline and Gemini. Re-binding to the same org and project keeps the key; replacing another binding needs --yes without a terminal. The first bind on this machine (state in ~/.retasc) also runs `retasc setup`, wiring the watchdog into every agent harness found.",
    run: bind,
  }),
  join: command({
    summary: "redeem an invite, then bind this folder in that org",
    usage: "retasc join <rtscinv_… | link> [--project-id <id> | --project <PFX>] [--runtime <label>] [--no-bind] [-y]",
    positionals: "<code|link>",
    options: {
      "no-bind": { type: "boolean", description: "redeem only; leave this folder alone" },
      "project-id": { type: "string", value: "<id>", description: "bind to this project" },
      project: { type: "string", value: "<PFX>", description: "bind to the project of this prefix or name" },
      runtime,
      transport,
      yes,
      url,
      json,
    },
    details: "Signs in first when there is no session. Invite codes work once and expire (7 days by default).",
    run: join,
  }),
  init: command({
    summary: "create an org and a project, mint a key and wire this folder, in one go",
    usage: "retasc init --project <name> --prefix <PFX> [--org <name> | --org-id <id>] [--runtime <label>]",
    options: {
      project: { type: "string", value: "<name>", description: "project name (required)" },
      prefix: { type: "string", value: "<PFX>", description: "issue prefix, 2-10 letters or digits (required)" },
      org: { type: "string", value: "<name>", description: "name of the new org (default: <your name>'s org)" },
      "org-id": { type: "string", value: "<id>", description: "use this existing org instead of creating one" },
      runtime,
      transport,
      yes,
      url,
      json,
    },
    details: "Invited to a team? Use `retasc join` instead: init creates a new org.",
    run: init,
  }),
};
