import fs from "node:fs";
import readline from "node:readline";
import { invalidInput } from "../errors.ts";
import { EXPORT_FORMAT, EXPORT_VERSION, SECTIONS, type ExportHeader, type Section, type SectionRecord } from "./format.ts";

export type ExportEntry = { [S in Section]: { section: S; record: SectionRecord[S] } }[Section];

const notAnExport = (why: string) =>
  invalidInput(`this file is not a Retasc export (${why})`, "Pass a JSON file written by `retasc export --format json` or `npm run admin -- export`.");

function checkHeader(value: unknown): ExportHeader {
  const header = value as Partial<ExportHeader> | null;
  if (!header || header.format !== EXPORT_FORMAT) throw notAnExport(`no "format": "${EXPORT_FORMAT}"`);
  if (header.version !== EXPORT_VERSION) {
    throw invalidInput(`export version ${String(header.version)} is not supported`, `This server reads version ${EXPORT_VERSION}.`);
  }
  if (!header.org || typeof header.org.timeZone !== "string") throw notAnExport("no org");
  return header as ExportHeader;
}

/**
 * Reads an export as written (one record per line, docs/export-format.md), in flat memory. A
 * document laid out otherwise (pretty-printed, reformatted by a tool) is read whole instead.
 */
export async function openExport(file: string): Promise<{ header: ExportHeader; entries: AsyncIterable<ExportEntry> }> {
  const first = await firstLine(file);
  if (first.endsWith(",") && first.startsWith("{")) {
    let header: ExportHeader | null = null;
    try {
      header = checkHeader(JSON.parse(first.slice(0, -1) + "}"));
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
    }
    if (header) return { header, entries: byLines(file) };
  }
  let whole: Record<string, unknown>;
  try {
    whole = JSON.parse(await fs.promises.readFile(file, "utf8")) as Record<string, unknown>;
  } catch {
    throw notAnExport("not JSON");
  }
  const header = checkHeader(whole);
  return {
    header,
    entries: (async function* () {
      for (const section of SECTIONS) {
        const records = whole[section];
        if (records === undefined) continue;
        if (!Array.isArray(records)) throw notAnExport(`"${section}" is not a list`);
        for (const record of records) yield { section, record } as ExportEntry;
      }
    })(),
  };
}

async function firstLine(file: string): Promise<string> {
  const lines = readline.createInterface({ input: fs.createReadStream(file, { encoding: "utf8", end: 1 << 20 }), crlfDelay: Infinity });
  try {
    for await (const line of lines) return line;
    return "";
  } finally {
    lines.close();
  }
}

async function* byLines(file: string): AsyncGenerator<ExportEntry> {
  const lines = readline.createInterface({ input: fs.createReadStream(file, { encoding: "utf8" }), crlfDelay: Infinity });
  let section: Section | null = null;
  let lineNumber = 0;
  for await (const line of lines) {
    lineNumber++;
    if (lineNumber === 1 || line === "") continue;
    const opened = /^"([a-z]+)":\[$/.exec(line);
    if (opened) {
      if (!(SECTIONS as readonly string[]).includes(opened[1]!)) throw notAnExport(`unknown section "${opened[1]}" on line ${lineNumber}`);
      section = opened[1] as Section;
    } else if (line === "]," || line === "]}") {
      section = null;
    } else if (section && line.startsWith("{")) {
      try {
        yield { section, record: JSON.parse(line.endsWith(",") ? line.slice(0, -1) : line) } as ExportEntry;
      } catch (error) {
        if (error instanceof SyntaxError) throw notAnExport(`line ${lineNumber} is not a record`);
        throw error;
      }
    } else {
      throw notAnExport(`unexpected line ${lineNumber}`);
    }
  }
}
