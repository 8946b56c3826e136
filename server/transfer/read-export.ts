/**
 * Reading an export a record at a time: the file streams through ExportParser
 * (read-export-parser.ts), which cuts each value out with ValueScan (read-export-scan.ts).
 */
import fs from "node:fs";
import { performance } from "node:perf_hooks";
import { setImmediate as nextTurn } from "node:timers/promises";
import { invalidInput } from "../errors.ts";
import { EXPORT_FORMAT, EXPORT_VERSION, type ExportHeader, type Section, type SectionRecord } from "./format.ts";
import { ExportParser, notAnExport, type ParsedEvent, type ReadLimits } from "./read-export-parser.ts";

export type { ReadLimits } from "./read-export-parser.ts";

export type ExportEntry = { [S in Section]: { section: S; record: SectionRecord[S] } }[Section];

/** The operator's `npm run admin -- import`: trusted files of any size, still read a record at a time. */
export const ADMIN_READ_LIMITS: ReadLimits = { recordBytes: 1024 * 1024 * 1024, recordValues: 5_000_000, depth: 64, sliceMs: 50 };

const CHUNK_BYTES = 64 * 1024;

function checkHeader(value: Record<string, unknown>, where: string): ExportHeader {
  const header = value as Partial<ExportHeader>;
  if (header.format !== EXPORT_FORMAT) throw notAnExport(`no "format": "${EXPORT_FORMAT}"${where}`);
  if (header.version !== EXPORT_VERSION) {
    throw invalidInput(`export version ${String(header.version)} is not supported`, `This server reads version ${EXPORT_VERSION}.`);
  }
  if (!header.org || typeof header.org !== "object" || typeof header.org.timeZone !== "string") throw notAnExport(`no org${where}`);
  return header as ExportHeader;
}

/**
 * Opens an export: reads its header (the fields before the first section), then hands out its
 * records one at a time, in the order written, within `limits`.
 */
export async function openExport(file: string, limits: ReadLimits = ADMIN_READ_LIMITS): Promise<{ header: ExportHeader; entries: AsyncIterable<ExportEntry> }> {
  const events = readEvents(file, limits);
  const fields: Record<string, unknown> = {};
  let first: ParsedEvent | null = null;
  try {
    for (;;) {
      const next = await events.next();
      if (next.done) break;
      if (next.value.kind === "field") fields[next.value.key] = next.value.value;
      else {
        first = next.value;
        break;
      }
    }
    const header = checkHeader(fields, first ? " before its first section" : "");
    return {
      header,
      entries: (async function* () {
        try {
          for (let event: ParsedEvent | null = first; event; event = (await events.next()).value ?? null) {
            if (event.kind === "record") yield { section: event.section, record: event.record } as ExportEntry;
          }
        } finally {
          // A consumer that stops early (a refused record) closes the file too.
          await events.return(undefined);
        }
      })(),
    };
  } catch (error) {
    await events.return(undefined);
    throw error;
  }
}

async function* readEvents(file: string, limits: ReadLimits): AsyncGenerator<ParsedEvent, void, undefined> {
  const parser = new ExportParser(limits);
  const stream = fs.createReadStream(file, { highWaterMark: CHUNK_BYTES });
  let since = performance.now();
  const yieldTurn = async () => {
    if (performance.now() - since < limits.sliceMs) return;
    await nextTurn();
    since = performance.now();
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (const event of parser.push(chunk)) {
        yield event;
        await yieldTurn();
      }
      await yieldTurn();
    }
    parser.end();
  } finally {
    stream.destroy();
  }
}
