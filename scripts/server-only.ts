import path from "node:path";
import type { Plugin } from "vite";

/** The folders no browser bundle may contain: the domain core, the schema and client factory, the job runners. */
export const serverOnlyDirs = ["server", "db", "workers"] as const;

/**
 * Fails a client build that pulls a module from `serverOnlyDirs` into the browser graph, the way
 * React Router refuses `*.server.ts`. Route modules import `server/` freely in loaders and
 * actions, which React Router strips from the client build; an import that survives the
 * stripping (a component calling a server function, a value import where `import type` was
 * meant) would ship server code, and secrets with it, to every browser.
 */
export function serverOnly(root: string, dirs: readonly string[] = serverOnlyDirs): Plugin {
  const prefixes = dirs.map((dir) => path.join(root, dir) + path.sep);
  return {
    name: "retasc:server-only",
    enforce: "pre",
    async resolveId(id, importer, options) {
      // The dev server's dependency scan reads route modules before React Router strips their loaders.
      const scan = (options as { scan?: boolean }).scan;
      if (!importer || this.environment.config.consumer !== "client" || scan) return;
      // Resolve once with the other plugins, then judge the file it lands on.
      if (options.custom?.["retasc:server-only"]) return;
      const resolved = await this.resolve(id, importer, { ...options, custom: { ...options.custom, "retasc:server-only": true } });
      if (!resolved || !prefixes.some((prefix) => resolved.id.startsWith(prefix))) return resolved;
      const short = (file: string) => path.relative(root, file.split("?")[0]!);
      throw new Error(
        `Server-only module referenced by client: '${id}' (${short(resolved.id)}) imported by '${short(importer)}'. ` +
          `${dirs.map((d) => `${d}/`).join(", ")} never reach the browser: import types with \`import type\`, ` +
          "and call server code from a loader or action.",
      );
    },
  };
}
