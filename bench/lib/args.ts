/** A benchmark's `--name N` option: a whole number of at least 1, else `fallback`; anything else exits 2 with one line. */
export function wholeNumberOption(name: string, fallback: number, args = process.argv.slice(2)): number {
  const at = args.indexOf(`--${name}`);
  const value = at >= 0 ? Number(args[at + 1]) : fallback;
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`--${name} takes a whole number of at least 1\n`);
    process.exit(2);
  }
  return value;
}
