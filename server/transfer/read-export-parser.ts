/** The outer shape of an export, cut into header fields, sections and records as its bytes arrive. */
import { invalidInput } from "../errors.ts";
import { SECTIONS, type Section } from "./format.ts";
import { CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, isSpace, OPEN_ARRAY, OPEN_OBJECT, QUOTE, ValueScan } from "./read-export-scan.ts";

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

/** A header field (format, version, exportedAt, differsOnImport, org) is small. */
const FIELD_MAX_BYTES = 64 * 1024;
/** The header fields the reader parses; other top-level fields are skipped unread. */
const HEADER_FIELDS = new Set(["format", "version", "exportedAt", "differsOnImport", "org"]);

export const notAnExport = (why: string) =>
  invalidInput(`this file is not a Retasc export (${why})`, "Pass a JSON file written by `retasc export --format json` or `npm run admin -- export`.");

export type ParsedEvent = { kind: "field"; key: string; value: unknown } | { kind: "section"; section: Section } | { kind: "record"; section: Section; record: unknown };

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
export class ExportParser {
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
