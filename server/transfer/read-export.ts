import fs from "node:fs";
import { performance } from "node:perf_hooks";
import { setImmediate as nextTurn } from "node:timers/promises";
import { invalidInput } from "../errors.ts";
import { EXPORT_FORMAT, EXPORT_VERSION, SECTIONS, type ExportHeader, type Section, type SectionRecord } from "./format.ts";

export type ExportEntry = { [S in Section]: { section: S; record: SectionRecord[S] } }[Section];

/**
 * What reading one export may cost (decision 037). The file is scanned as it streams from disk,
 * whatever its layout (one record per line as written, pretty-printed, or one line), and only one
 * record is ever held: a record is cut out of the stream, its size and count of values checked
 * while it is scanned, then parsed alone. What parsing allocates is bounded by `recordValues`,
 * what is held by `recordBytes`, and the reader lets other work run every `sliceMs` of the event
 * loop it takes (with whatever the consumer did with the records meanwhile).
 */
export interface ReadLimits {
  /** The largest record, in bytes (an issue with its comments and files is the largest kind). */
  recordBytes: number;
  /** The most JSON values (objects, arrays and their members) one record may hold. */
  recordValues: number;
  /** Nesting deeper than this, in a record or a header field, is refused. */
  depth: number;
  /** The longest stretch of event-loop time, in ms, before the reader yields a turn. */
  sliceMs: number;
}

/** The operator's `npm run admin -- import`: trusted files of any size, still read a record at a time. */
export const ADMIN_READ_LIMITS: ReadLimits = { recordBytes: 1024 * 1024 * 1024, recordValues: 5_000_000, depth: 64, sliceMs: 50 };

/** A header field (format, version, exportedAt, differsOnImport, org) is small. */
const FIELD_MAX_BYTES = 64 * 1024;
/** The header fields the reader parses; other top-level fields are skipped unread. */
const HEADER_FIELDS = new Set(["format", "version", "exportedAt", "differsOnImport", "org"]);
const CHUNK_BYTES = 64 * 1024;

const notAnExport = (why: string) =>
  invalidInput(`this file is not a Retasc export (${why})`, "Pass a JSON file written by `retasc export --format json` or `npm run admin -- export`.");

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

type ParsedEvent = { kind: "field"; key: string; value: unknown } | { kind: "section"; section: Section } | { kind: "record"; section: Section; record: unknown };

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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
const endsScalar = (b: number) => b === COMMA || b === CLOSE_OBJECT || b === CLOSE_ARRAY || isSpace(b);

/**
 * One JSON value cut out of the stream as its bytes arrive: an object or array (to its closing
 * bracket), a string, or a scalar (to the byte after it). Counts values and depth as it goes and
 * throws as soon as either, or the byte count, passes its limit; keeps the bytes only when asked.
 */
class ValueScan {
  private readonly parts: Buffer[] = [];
  private bytes = 0;
  private depth = 0;
  private values = 1;
  private inString = false;
  private escaped = false;
  private readonly shape: "container" | "string" | "scalar";

  constructor(
    first: number,
    private readonly keep: boolean,
    private readonly limits: { bytes: number; values: number; depth: number },
    private readonly what: () => string,
  ) {
    this.shape = first === OPEN_OBJECT || first === OPEN_ARRAY ? "container" : first === QUOTE ? "string" : "scalar";
  }

  /** Scans `chunk` from `at`; returns the index just past the value, or -1 when it goes on in the next chunk. */
  feed(chunk: Buffer, at: number): number {
    let i = at;
    if (this.shape === "scalar") {
      while (i < chunk.length && !endsScalar(chunk[i]!)) i++;
      this.take(chunk, at, i);
      return i < chunk.length ? i : -1;
    }
    for (; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === BACKSLASH) this.escaped = true;
        else if (b === QUOTE) {
          this.inString = false;
          if (this.shape === "string" && this.depth === 0) return this.finish(chunk, at, i + 1);
        }
        continue;
      }
      if (b === QUOTE) this.inString = true;
      else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
        if (++this.depth > this.limits.depth) throw invalidInput(`${this.what()} nests deeper than ${this.limits.depth} levels`, HINT);
        this.count();
      } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
        if (--this.depth === 0) return this.finish(chunk, at, i + 1);
      } else if (b === COMMA) this.count();
    }
    this.take(chunk, at, i);
    return -1;
  }

  /** The value's text, once `feed` has found its end. */
  text(): string {
    return (this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts)).toString("utf8");
  }

  private count(): void {
    if (++this.values > this.limits.values) throw invalidInput(`${this.what()} holds more than ${this.limits.values} values`, HINT);
  }

  private finish(chunk: Buffer, from: number, to: number): number {
    this.take(chunk, from, to);
    return to;
  }

  private take(chunk: Buffer, from: number, to: number): void {
    this.bytes += to - from;
    if (this.bytes > this.limits.bytes) throw invalidInput(`${this.what()} is larger than ${this.limits.bytes} bytes`, HINT);
    if (this.keep && to > from) this.parts.push(chunk.subarray(from, to));
  }
}

const HINT = "Export the org again: an export's records are far smaller. A larger org comes back with `npm run admin -- import` on the server.";

type State =
  | "start"
  | "key-or-end"
  | "key"
  | "colon"
  | "value"
  | "field"
  | "after-field"
  | "record-or-end"
  | "record"
  | "after-record"
  | "done";

/**
 * The export's outer shape, fed chunk by chunk: `{ "field": value, …, "section": [ {record}, … ], … }`.
 * Header fields are parsed, unknown fields skipped unread, sections taken in the order of
 * SECTIONS (each at most once), and each record parsed on its own.
 */
class ExportParser {
  private state: State = "start";
  private scan: ValueScan | null = null;
  private key = "";
  private section: Section | null = null;
  private lastSection = -1;
  private records = 0;

  constructor(private readonly limits: ReadLimits) {}

  push(chunk: Buffer): ParsedEvent[] {
    const events: ParsedEvent[] = [];
    let i = 0;
    while (i < chunk.length) {
      if (this.scan) {
        const end = this.scan.feed(chunk, i);
        if (end < 0) return events;
        i = end;
        this.scanned(events);
        continue;
      }
      const b = chunk[i]!;
      if (isSpace(b)) {
        i++;
        continue;
      }
      switch (this.state) {
        case "start":
          if (b !== OPEN_OBJECT) throw notAnExport("not JSON");
          this.state = "key-or-end";
          break;
        case "key-or-end":
          if (b === CLOSE_OBJECT) this.state = "done";
          else this.startKey(b);
          break;
        case "key":
          this.startKey(b);
          break;
        case "colon":
          if (b !== COLON) throw notAnExport("not JSON");
          this.state = "value";
          break;
        case "value":
          this.startValue(b, events);
          break;
        case "after-field":
          if (b === COMMA) this.state = "key";
          else if (b === CLOSE_OBJECT) this.state = "done";
          else throw notAnExport("not JSON");
          break;
        case "record-or-end":
          if (b === CLOSE_ARRAY && this.records === 0) this.endSection();
          else this.startRecord(b);
          break;
        case "after-record":
          if (b === COMMA) this.state = "record-or-end";
          else if (b === CLOSE_ARRAY) this.endSection();
          else throw notAnExport(`record ${this.records} of "${this.section}" is not followed by a comma or the section's end`);
          break;
        case "done":
          throw notAnExport("there is more after its end");
        default:
          throw notAnExport("not JSON");
      }
      // A value's first byte belongs to the scan it started.
      if (!this.scan) i++;
    }
    return events;
  }

  end(): void {
    if (this.state !== "done") throw notAnExport(this.state === "start" ? "not JSON" : "it ends before it is complete; it may have been cut short");
  }

  private startKey(b: number): void {
    if (b !== QUOTE) throw notAnExport("not JSON");
    this.scan = new ValueScan(b, true, { bytes: 256, values: 1, depth: 0 }, () => "a field name");
    this.state = "key";
  }

  private startValue(b: number, events: ParsedEvent[]): void {
    const index = (SECTIONS as readonly string[]).indexOf(this.key);
    if (index >= 0) {
      if (b !== OPEN_ARRAY) throw notAnExport(`"${this.key}" is not a list`);
      if (index <= this.lastSection) throw notAnExport(`"${this.key}" comes after "${SECTIONS[this.lastSection]}" or twice (sections come in the order ${SECTIONS.join(", ")})`);
      this.lastSection = index;
      this.section = this.key as Section;
      this.records = 0;
      events.push({ kind: "section", section: this.section });
      this.state = "record-or-end";
      return;
    }
    const keep = HEADER_FIELDS.has(this.key) && this.lastSection < 0;
    const name = this.key;
    this.scan = new ValueScan(b, keep, { bytes: keep ? FIELD_MAX_BYTES : Infinity, values: keep ? 10_000 : Infinity, depth: this.limits.depth }, () => `the field "${name}"`);
    this.state = "field";
  }

  private startRecord(b: number): void {
    this.records++;
    if (b !== OPEN_OBJECT) throw notAnExport(`record ${this.records} of "${this.section}" is not an object`);
    const [section, n] = [this.section, this.records];
    this.scan = new ValueScan(b, true, { bytes: this.limits.recordBytes, values: this.limits.recordValues, depth: this.limits.depth }, () => `record ${n} of "${section}"`);
    this.state = "record";
  }

  private endSection(): void {
    this.section = null;
    this.state = "after-field";
  }

  /** A scan has found the end of its value. */
  private scanned(events: ParsedEvent[]): void {
    const scan = this.scan!;
    this.scan = null;
    switch (this.state) {
      case "key":
        this.key = parse(scan.text(), () => notAnExport("not JSON")) as string;
        this.state = "colon";
        return;
      case "field":
        if (HEADER_FIELDS.has(this.key) && this.lastSection < 0) {
          events.push({ kind: "field", key: this.key, value: parse(scan.text(), () => notAnExport(`its "${this.key}" is not JSON`)) });
        }
        this.state = "after-field";
        return;
      case "record":
        events.push({ kind: "record", section: this.section!, record: parse(scan.text(), () => notAnExport(`record ${this.records} of "${this.section}" is not JSON`)) });
        this.state = "after-record";
        return;
      default:
        throw notAnExport("not JSON");
    }
  }
}

function parse(text: string, refusal: () => Error): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw refusal();
  }
}
