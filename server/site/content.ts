import fs from "node:fs";
import path from "node:path";
import { cliInstallCommand } from "../../constants/cli-install.ts";
import { markdownNames } from "./docs.ts";
import type { PublicPage } from "./pages.ts";

/**
 * The written pages (`/product`, `/compare`, `/migrate`, `/guides` and each guide): one Markdown
 * file each in server/site/content/, with a front matter of `title:` and `description:` lines.
 * `{{origin}}` becomes this server's public origin and `{{install}}` the CLI's install line from
 * it, so every command a page prints works as printed here.
 */
const CONTENT_DIR = path.resolve("server/site/content");

/** A page's path and its file: `/guides/agent-swarm` → `guides/agent-swarm.md`. */
const NAME = /^\/(?:guides\/)?[a-z0-9][a-z0-9-]*$/;

interface Source {
  title: string;
  description: string;
  body: string;
}

const sources = new Map<string, Source | null>();

function parse(file: string, text: string): Source {
  const match = /^---\n([\s\S]*?)\n---\n/.exec(text);
  if (!match) throw new Error(`${file}: no front matter`);
  const fields = Object.fromEntries(
    match[1]!.split("\n").map((line) => {
      const colon = line.indexOf(":");
      return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
    }),
  );
  if (!fields.title || !fields.description) throw new Error(`${file}: front matter needs title and description`);
  return { title: fields.title, description: fields.description, body: text.slice(match[0].length) };
}

/** The file behind a path, read once per process (the files are the build's), or null. */
function source(pagePath: string, contentDir: string): Source | null {
  if (!NAME.test(pagePath)) return null;
  const file = path.join(contentDir, `${pagePath.slice(1)}.md`);
  if (!sources.has(file)) sources.set(file, fs.existsSync(file) ? parse(file, fs.readFileSync(file, "utf8")) : null);
  return sources.get(file)!;
}

export function writtenPage(pagePath: string, origin: string, contentDir = CONTENT_DIR): PublicPage | null {
  const page = source(pagePath, contentDir);
  if (!page) return null;
  const fill = (text: string) => text.replaceAll("{{origin}}", origin).replaceAll("{{install}}", cliInstallCommand(origin));
  return { path: pagePath, title: `${page.title} · Retasc`, description: fill(page.description), markdown: fill(page.body) };
}

/** Every written page's path, the guides after the top-level pages. */
export function writtenPaths(contentDir = CONTENT_DIR): string[] {
  return [...markdownNames(contentDir, "/"), ...markdownNames(path.join(contentDir, "guides"), "/guides/")];
}
