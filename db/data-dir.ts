import fs from "node:fs";
import path from "node:path";

export class DataDirHeldError extends Error {
  constructor(dir: string, pid: number) {
    super(
      `the data directory ${dir} is in use by another Retasc process (pid ${pid}); ` +
        "stop it first, or point RETASC_DATA_DIR elsewhere",
    );
    this.name = "DataDirHeldError";
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Makes everything under `dir` readable by its owner only: folders 0700, files 0600.
 * PGlite writes its files with explicit modes (0666 for a fresh cluster, whatever the
 * process umask), and the WAL in there holds what the database holds. The 0700 folder is
 * what keeps other local users out; the file modes keep a copied or loosened folder private.
 * Symbolic links are left alone (their targets are not the data directory's).
 */
export function tightenDataDir(dir: string): void {
  tighten(dir, fs.lstatSync(dir));
}

function tighten(file: string, stat: fs.Stats): void {
  if (stat.isSymbolicLink()) return;
  const wanted = stat.isDirectory() ? 0o700 : 0o600;
  if ((stat.mode & 0o777) !== wanted) fs.chmodSync(file, wanted);
  if (!stat.isDirectory()) return;
  for (const name of fs.readdirSync(file)) {
    const child = path.join(file, name);
    tighten(child, fs.lstatSync(child));
  }
}

/**
 * PGlite must never be opened by two processes. A pid file taken with O_EXCL guards the
 * directory; a stale file from a crashed process is taken over. The directory is created
 * private, and an existing one is made private again (see tightenDataDir).
 */
export function lockDataDir(dir: string): () => void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  tightenDataDir(dir);
  const lockFile = path.join(dir, "retasc.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: "wx", mode: 0o600 });
      return () => {
        try {
          if (fs.readFileSync(lockFile, "utf8") === String(process.pid)) fs.unlinkSync(lockFile);
        } catch {
          // already gone
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const pid = Number(fs.readFileSync(lockFile, "utf8").trim());
      if (pid && pid !== process.pid && alive(pid)) throw new DataDirHeldError(dir, pid);
      fs.unlinkSync(lockFile);
    }
  }
  throw new Error(`could not lock ${dir}`);
}
