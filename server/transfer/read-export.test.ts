import fs from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { removeTemps, tempDir } from "../testing/temp-dirs.ts";
import { SECTIONS } from "./format.ts";
import { UPLOAD_READ_LIMITS } from "./import.ts";
import { ADMIN_READ_LIMITS, openExport, type ReadLimits } from "./read-export.ts";

/**
 * The export reader (decision 037): whatever the layout, the same records in the same order, one
 * record held at a time, and a file shaped to cost memory or time refused at the record that
 * would, before it is parsed.
 */
afterAll(removeTemps);
const dir = tempDir("retasc-read-export-");
let files = 0;
const header = { format: "retasc-export", version: 1, exportedAt: "2026-01-01T00:00:00.000Z", differsOnImport: [], org: { id: "o", name: "Org", timeZone: "UTC", createdAt: "2026-01-01T00:00:00.000Z" } };

const write = (text: string) => {
  const file = `${dir}/export-${++files}.json`;
  fs.writeFileSync(file, text);
  return file;
};

/** The document as the export writes it: one record per line inside each section. */
function asWritten(doc: Record<string, unknown[]>): string {
  const sections = SECTIONS.filter((s) => s in doc).map((s) => `"${s}":[\n${doc[s]!.map((r) => JSON.stringify(r)).join(",\n")}\n]`);
  return sections.length ? `${JSON.stringify(header).slice(0, -1)},\n${sections.join(",\n")}}` : JSON.stringify(header);
}

async function read(file: string, limits: ReadLimits = ADMIN_READ_LIMITS) {
  const { header: read, entries } = await openExport(file, limits);
  const out: { section: string; record: unknown }[] = [];
  for await (const entry of entries) out.push(entry);
  return { header: read, entries: out };
}

const refusal = (file: string, limits?: ReadLimits) => read(file, limits).then(() => null, (error: { code?: string; message: string }) => ({ code: error.code, message: error.message }));

describe("reading an export", () => {
  it("reads the same records as written, pretty-printed or on one line, across chunk boundaries and escapes", async () => {
    const record = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 6 });
    // Long strings of quotes and backslashes put structural-looking bytes at every chunk boundary.
    const filler = fc.string({ unit: fc.constantFrom("\\", '"', "{", "}", "[", "]", ",", "a", "é", "😀"), minLength: 20_000, maxLength: 70_000 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom(...SECTIONS), record, filler), { maxLength: 12 }), fc.constantFrom("written", "pretty", "line"), async (rows, layout) => {
        const doc: Record<string, unknown[]> = {};
        for (const section of SECTIONS) {
          const mine = rows.filter(([s]) => s === section).map(([, r, pad]) => ({ ...r, pad }));
          if (mine.length) doc[section] = mine;
        }
        const whole = { ...header, ...doc };
        const text = layout === "written" ? asWritten(doc) : JSON.stringify(whole, null, layout === "pretty" ? 2 : undefined);
        const { header: got, entries } = await read(write(text));
        expect(got).toEqual(header);
        expect(entries).toEqual(SECTIONS.flatMap((section) => (doc[section] ?? []).map((r) => ({ section, record: JSON.parse(JSON.stringify(r)) }))));
      }),
      { numRuns: 25, seed: 37 },
    );
  });

  it("refuses what is not an export, naming why", async () => {
    expect(await refusal(write(""))).toMatchObject({ code: "INVALID_INPUT", message: "this file is not a Retasc export (not JSON)" });
    expect(await refusal(write("this is not json at all"))).toMatchObject({ message: "this file is not a Retasc export (not JSON)" });
    expect(await refusal(write(JSON.stringify({ ...header, version: 99 })))).toMatchObject({ message: "export version 99 is not supported" });
    expect(await refusal(write(`{"people":[],${JSON.stringify(header).slice(1)}`))).toMatchObject({ message: 'this file is not a Retasc export (no "format": "retasc-export" before its first section)' });
    const cut = asWritten({ people: [{ id: "a" }, { id: "b" }] });
    expect(await refusal(write(cut.slice(0, cut.length - 10)))).toMatchObject({ message: "this file is not a Retasc export (it ends before it is complete; it may have been cut short)" });
    expect(await refusal(write(`${JSON.stringify(header).slice(0, -1)},"projects":[],"people":[]}`))).toMatchObject({ message: expect.stringContaining('"people" comes after "projects" or twice') });
    expect(await refusal(write(`${JSON.stringify(header).slice(0, -1)},"people":[1]}`))).toMatchObject({ message: 'this file is not a Retasc export (record 1 of "people" is not an object)' });
    expect(await refusal(write(`${JSON.stringify(header).slice(0, -1)},"people":[{"a":tru}]}`))).toMatchObject({ message: 'this file is not a Retasc export (record 1 of "people" is not JSON)' });
    expect(await refusal(write(`${JSON.stringify(header)} {}`))).toMatchObject({ message: "this file is not a Retasc export (there is more after its end)" });
  });

  it("refuses a record past its limits as it scans it, without parsing it: values, depth, size, and a header field past 64 KiB", async () => {
    const open = `${JSON.stringify(header).slice(0, -1)},"people":[`;
    const values = await refusal(write(`${open}{"x":[${"{},".repeat(300_000)}{}]}]}`), UPLOAD_READ_LIMITS);
    expect(values).toMatchObject({ code: "INVALID_INPUT", message: 'record 1 of "people" holds more than 200000 values' });
    const deep = await refusal(write(`${open}{"x":${"[".repeat(40)}${"]".repeat(40)}}]}`), UPLOAD_READ_LIMITS);
    expect(deep).toMatchObject({ message: 'record 1 of "people" nests deeper than 32 levels' });
    const large = await refusal(write(`${open}{"x":"${"a".repeat(2048)}"}]}`), { ...UPLOAD_READ_LIMITS, recordBytes: 1024 });
    expect(large).toMatchObject({ message: 'record 1 of "people" is larger than 1024 bytes' });
    const field = await refusal(write(`${JSON.stringify({ ...header, org: { ...header.org, name: "n".repeat(70_000) } })}`), UPLOAD_READ_LIMITS);
    expect(field).toMatchObject({ message: 'the field "org" is larger than 65536 bytes' });
    // A field the reader has no use for is skipped unread, however large.
    const skipped = await read(write(`${JSON.stringify(header).slice(0, -1)},"padding":[${"{},".repeat(100_000)}{}],"people":[{"id":"a"}]}`), UPLOAD_READ_LIMITS);
    expect(skipped.entries).toEqual([{ section: "people", record: { id: "a" } }]);
  });

  it("reads 32 MiB of tiny objects, which parsed whole took a gigabyte, in flat memory and short turns", async () => {
    const tiny = "{},".repeat(Math.floor((UPLOAD_READ_LIMITS.recordBytes - 200) / 3));
    const file = write(`${JSON.stringify(header).slice(0, -1)},"padding":[${tiny}{}],"people":[{"id":"a"}]}`);
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const { entries } = await read(file, UPLOAD_READ_LIMITS);
    delay.disable();
    clearInterval(sampler);
    expect(entries).toHaveLength(1);
    expect(peak - before, "heap growth, bytes").toBeLessThan(64 * 1024 * 1024);
    // The turns are a figure (bench/upload.ts measures them under /healthz); the bound is against
    // a whole parse's seconds, not against a loaded machine's scheduling (177 ms seen at load 20).
    console.info(`read-export: 32 MiB of tiny objects, heap +${Math.round((peak - before) / 2 ** 20)} MiB, longest event-loop delay ${Math.round(delay.max / 1e6)} ms`);
    expect(delay.max / 1e6, "longest event-loop delay, ms").toBeLessThan(1000);
  });

  it("hands the event loop back every sliceMs while its consumer works, however many records one chunk holds", async () => {
    // 3,000 small records: one 64 KiB chunk of the file, so no read from disk comes between them.
    const people = Array.from({ length: 3000 }, (_, i) => ({ id: `p${i}` }));
    const file = write(asWritten({ people }));
    expect(fs.statSync(file).size).toBeLessThan(64 * 1024);
    // Another request's turn, counted: each time the loop is handed back, this runs once.
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const started = performance.now();
    const { entries } = await openExport(file, UPLOAD_READ_LIMITS);
    let records = 0;
    for await (const _ of entries) {
      // The import's own synchronous work with each record (checks, building inserts): 0.2 ms.
      const until = performance.now() + 0.2;
      while (performance.now() < until);
      records++;
    }
    const took = performance.now() - started;
    ticking = false;
    expect(records).toBe(3000);
    // 600 ms of work at a turn every 10 ms: about 60 turns (a handful, the file's reads, without them).
    expect(took).toBeGreaterThan(500);
    expect(turns, `turns handed back in ${Math.round(took)} ms`).toBeGreaterThanOrEqual(20);
  });
});
