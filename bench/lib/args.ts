/**
 * A benchmark's `--name N` option: a whole number of at least `least` (1 unless told), else
 * `fallback`; anything else exits 2 with one line.
 */
export function wholeNumberOption(name: string, fallback: number, { least = 1, args = process.argv.slice(2) } = {}): number {
  const at = args.indexOf(`--${name}`);
  const value = at >= 0 ? Number(args[at + 1]) : fallback;
  if (!Number.isInteger(value) || value < least) {
    process.stderr.write(`--${name} takes a whole number of at least ${least}\n`);
    process.exit(2);
  }
  return value;
}
