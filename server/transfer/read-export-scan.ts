/**
 * The bytes of one JSON value as they stream past (read-export-parser.ts cuts an export into
 * them): its end found and its size, values and depth counted without parsing it.
 */
import { invalidInput } from "../errors.ts";

export const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
const endsScalar = (b: number) => b === COMMA || b === CLOSE_OBJECT || b === CLOSE_ARRAY || isSpace(b);

/**
 * One JSON value cut out of the stream as its bytes arrive: an object or array (to its closing
 * bracket), a string, or a scalar (to the byte after it). Counts values and depth as it goes and
 * throws as soon as either, or the byte count, passes its limit; keeps the bytes only when asked.
 */
export class ValueScan {
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
