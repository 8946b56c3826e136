import { execFileSync } from "node:child_process";
import fs from "node:fs";

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`), read once. */
let ticksPerSecond: number | null = null;

/**
 * CPU seconds (user + system) each group of this machine's processes has used so far, read
 * from /proc (Linux; elsewhere an empty map). `groupOf` names a process's group from its pid and
 * command line, or null to leave it out. A process that ended is not counted, so read before
 * and after a phase whose processes outlive it.
 */
export function cpuSecondsByGroup(groupOf: (pid: number, cmdline: string) => string | null): Map<string, number> {
  const seconds = new Map<string, number>();
  for (const { group, seconds: s } of cpuSecondsByPid(groupOf).values()) seconds.set(group, (seconds.get(group) ?? 0) + s);
  return seconds;
}

/** The same by process: its group and CPU seconds so far. */
export function cpuSecondsByPid(groupOf: (pid: number, cmdline: string) => string | null): Map<number, { group: string; seconds: number }> {
  const seconds = new Map<number, { group: string; seconds: number }>();
  if (!fs.existsSync("/proc/self/stat")) return seconds;
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      const group = groupOf(Number(entry), cmdline);
      if (group === null) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after the command's closing parenthesis; utime and stime are the 14th and 15th.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ticks = Number(fields[11]) + Number(fields[12]);
      seconds.set(Number(entry), { group, seconds: ticks / ticksPerSecond });
    } catch {
      // The process ended while being read.
    }
  }
  return seconds;
}

/** What each group used between two readings, in ms per unit of work. */
export function cpuMsPer(before: Map<string, number>, after: Map<string, number>, units: number): Record<string, number> {
  return Object.fromEntries([...after].map(([group, s]) => [group, (1000 * (s - (before.get(group) ?? 0))) / units]));
}

/**
 * What each group used between two readings by process (cpuSecondsByPid), in ms per unit of
 * work: a process that ended between them (an idle connection closed) is left out rather than
 * counted as a negative; one that started counts from zero.
 */
export function cpuMsPerByPid(
  before: Map<number, { group: string; seconds: number }>,
  after: Map<number, { group: string; seconds: number }>,
  units: number,
): Record<string, number> {
  const ms: Record<string, number> = {};
  for (const [pid, { group, seconds }] of after) ms[group] = (ms[group] ?? 0) + (1000 * (seconds - (before.get(pid)?.seconds ?? 0))) / units;
  return ms;
}
