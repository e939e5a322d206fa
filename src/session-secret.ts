import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { databaseKind, sqlitePath } from "./store/database.js";

/** The file, in the data directory, holding the session key generated when GREENLINE_SESSION_SECRET is unset. */
export const SESSION_SECRET_FILE = "session-secret";

/** The shortest key GREENLINE_SESSION_SECRET accepts, and the file must hold. */
const MIN_LENGTH = 32;

/**
 * Greenline's data directory (GREENLINE_DATA_DIR): by default the SQLite database's directory
 * (`./data` for the default database), and `./data` in the working directory on PostgreSQL.
 */
export function dataDirectory(databaseUrl: string, configured: string | undefined): string {
  if (configured) return resolve(configured);
  return databaseKind(databaseUrl) === "sqlite" ? dirname(sqlitePath(databaseUrl)) : resolve("data");
}

export class SessionSecretError extends Error {}

export type PersistedSecret = {
  secret: string;
  file: string;
  /** This process generated it (no file was there). */
  created: boolean;
  /** The file can be read by others than its owner (its mode allows group or world access). */
  exposed: boolean;
};

/** The key in `file`, trimmed; undefined when there is no file. */
function readSecret(file: string): { secret: string; exposed: boolean } | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new SessionSecretError(`${file} cannot be read (${(error as Error).message}): set GREENLINE_SESSION_SECRET, or let Greenline read the file`);
  }
  const secret = text.trim();
  if (secret.length < MIN_LENGTH) {
    throw new SessionSecretError(`${file} does not hold a session key (at least ${MIN_LENGTH} characters): delete it to generate a new one (everyone is signed out), or set GREENLINE_SESSION_SECRET`);
  }
  return { secret, exposed: (statSync(file).mode & 0o077) !== 0 };
}

/**
 * The dashboard's session key when GREENLINE_SESSION_SECRET is unset: read from
 * `<dir>/session-secret`, or generated and written there (mode 0600) when the file does not
 * exist, so that a restart keeps everyone signed in. Two processes starting at once on the same
 * directory end with the same key: the key is written whole to a file of this process's own,
 * then hard-linked to its name, which fails (EEXIST) for all but the first; the others read it.
 * Where the file system has no hard links, the file is created exclusively ('wx') instead, and
 * a process that finds it still empty reads it again for up to a second.
 */
export function persistedSessionSecret(dir: string): PersistedSecret {
  const file = join(dir, SESSION_SECRET_FILE);
  const found = readSecret(file);
  if (found) return { ...found, file, created: false };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString("base64url");
  const temporary = join(dir, `.${SESSION_SECRET_FILE}.${process.pid}.${randomBytes(6).toString("hex")}`);
  try {
    writeFileSync(temporary, `${secret}\n`, { mode: 0o600, flag: "wx" });
    linkSync(temporary, file);
    return { secret, file, created: true, exposed: false };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return { ...readSecret(file)!, file, created: false };
    if (code === "EPERM" || code === "ENOTSUP" || code === "EOPNOTSUPP" || code === "ENOSYS") return createExclusively(file, secret);
    throw new SessionSecretError(`${file} cannot be written (${(error as Error).message}): set GREENLINE_SESSION_SECRET, or make the data directory (GREENLINE_DATA_DIR) writable`);
  } finally {
    rmSync(temporary, { force: true });
  }
}

function createExclusively(file: string, secret: string): PersistedSecret {
  try {
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: "wx" });
    return { secret, file, created: true, exposed: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  // Another process created it and may not have written it yet.
  const deadline = Date.now() + 1000;
  for (;;) {
    try {
      return { ...readSecret(file)!, file, created: false };
    } catch (error) {
      if (!(error instanceof SessionSecretError) || Date.now() > deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}
