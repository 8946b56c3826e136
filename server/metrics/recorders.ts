/**
 * The series every agent call records into (HTTP requests, tool calls, dispatch, claims), kept
 * without allocating per call. prom-client's `observe` and `inc` build a labels object and a key
 * string on every call; these keep one row per pair of label values, made the first time the
 * pair is seen, so a call costs two Map lookups and a few additions. prom-client's registry still
 * formats them at scrape time (`get()` returns its metric shape), so `/metrics` reads the same.
 * Label values stay closed sets (server/metrics/index.ts), so the rows stay few.
 */
interface Row {
  /** The label values by name, for the scrape. */
  labels: Record<string, string>;
  /**
   * A histogram's count per bucket (not cumulative; one slot past the last bound for +Inf), then
   * its sum and count; a counter's value. Numbers in a typed array are written in place, where an
   * object's number field may box a new one on each write.
   */
  values: Float64Array;
}

type Values = { value: number; labels: Record<string, string | number>; sharedLabels?: Record<string, string>; metricName?: string }[];

/** Rows by their first label value, then their second ("" where a series has fewer labels). */
class Rows {
  private readonly byFirst = new Map<string, Map<string | number, Row>>();
  /** In the order first seen, as prom-client scrapes its series. */
  private readonly ordered: Row[] = [];

  constructor(
    private readonly labelNames: readonly string[],
    private readonly slots: number,
  ) {}

  row(first: string, second: string | number): Row {
    let bySecond = this.byFirst.get(first);
    if (bySecond === undefined) this.byFirst.set(first, (bySecond = new Map()));
    let row = bySecond.get(second);
    if (row === undefined) {
      const labels: Record<string, string> = {};
      [first, String(second)].slice(0, this.labelNames.length).forEach((value, index) => (labels[this.labelNames[index]!] = value));
      bySecond.set(second, (row = { labels, values: new Float64Array(this.slots) }));
      this.ordered.push(row);
    }
    return row;
  }

  all(): readonly Row[] {
    return this.ordered;
  }

  clear() {
    this.byFirst.clear();
    this.ordered.length = 0;
  }
}

/** What both series share: prom-client's metric fields, the rows, and the reset. */
abstract class PairMetric {
  readonly aggregator = "sum";
  protected readonly rows: Rows;

  constructor(
    readonly name: string,
    readonly help: string,
    labelNames: readonly string[],
    slots: number,
  ) {
    this.rows = new Rows(labelNames, slots);
  }

  reset() {
    this.rows.clear();
  }
}

/** A histogram of up to two labels (prom-client's `Histogram`, recorded without allocating). */
export class PairHistogram extends PairMetric {
  readonly type = "histogram";

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {
    super(name, help, labelNames, bounds.length + 3);
  }

  /** One observation of `ms` milliseconds (kept in seconds): converted here, so no number is boxed to pass it. */
  observeMs(first: string, second: string | number, ms: number): void {
    const values = this.rows.row(first, second).values;
    const seconds = ms / 1000;
    const bounds = this.bounds.length;
    let slot = 0;
    while (slot < bounds && seconds > this.bounds[slot]!) slot++;
    values[slot]! += 1;
    values[bounds + 1]! += seconds;
    values[bounds + 2]! += 1;
  }

  get() {
    const values: Values = [];
    const bounds = this.bounds.length;
    for (const row of this.rows.all()) {
      let cumulative = 0;
      this.bounds.forEach((bound, slot) => {
        cumulative += row.values[slot]!;
        values.push({ value: cumulative, labels: { le: bound }, sharedLabels: row.labels, metricName: `${this.name}_bucket` });
      });
      const [sum, count] = [row.values[bounds + 1]!, row.values[bounds + 2]!];
      values.push({ value: count, labels: { le: "+Inf" }, sharedLabels: row.labels, metricName: `${this.name}_bucket` });
      values.push({ value: sum, labels: {}, sharedLabels: row.labels, metricName: `${this.name}_sum` });
      values.push({ value: count, labels: {}, sharedLabels: row.labels, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** A counter of up to two labels (prom-client's `Counter`, recorded without allocating). */
export class PairCounter extends PairMetric {
  readonly type = "counter";

  constructor(name: string, help: string, labelNames: readonly string[]) {
    super(name, help, labelNames, 1);
  }

  inc(first: string, second: string | number): void {
    this.rows.row(first, second).values[0]! += 1;
  }

  get() {
    const values: Values = [];
    for (const row of this.rows.all()) values.push({ value: row.values[0]!, labels: row.labels });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
