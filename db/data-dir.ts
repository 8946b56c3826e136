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
 * PGlite must never be opened by two processes. A pid file taken with O_EXCL guards the
 * directory; a stale file from a crashed process is taken over.
 */
export function lockDataDir(dir: string): () => void {
  fs.mkdirSync(dir, { recursive: true });
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
