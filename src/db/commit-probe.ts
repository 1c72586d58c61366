/**
 * Tells, with one small read and no SQL, whether any connection (this process or another one) may
 * have committed to a WAL database since the previous look.
 *
 * Why not `PRAGMA data_version`: it is exact, but it is a statement, and every statement outside a
 * transaction starts a read transaction, which in WAL mode costs several system calls (the check
 * that the WAL file still exists, the read-mark lock and its release). Measured on the GET cache's
 * hit path, that was the largest single cost of a cached answer. This probe is asked first, and the
 * pragma runs only when the probe says something may have changed.
 *
 * How: in WAL mode SQLite keeps the WAL-index in the `-shm` file, shared (mmap) by every connection.
 * Its first 48 bytes are the WAL-index header, which every commit rewrites: `iChange` counts the
 * transactions, `mxFrame` and the checksums move with every frame, the salts change when the WAL
 * restarts (SQLite's "WAL-mode File Format" document, section "The WAL-Index Header", for the unix
 * VFS). A writer publishes the first copy of the header last, as the final step of its commit, so a
 * header that reads the same as before means no commit has become visible since: a reader would see
 * the same snapshot. Any difference, a read that fails or a file that is not there is reported as a
 * possible change, and the caller then asks SQLite itself.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import type { Database } from 'better-sqlite3';

/** Bytes of the first copy of the WAL-index header. */
const headerBytes = 48;

export class CommitProbe {
  private fd: number | undefined;
  private last = Buffer.alloc(headerBytes);
  private next = Buffer.alloc(headerBytes);

  /** @param db the connection whose database is watched (its WAL-index is `<file>-shm`) */
  constructor(private readonly db: Database) {}

  /**
   * False only when no connection can have committed since the previous call; true on the first
   * call and whenever the header cannot be read (an in-memory database has none). The file is
   * closed with the connection.
   */
  mayHaveChanged(): boolean {
    if (!this.db.open) {
      this.close();
      return true;
    }
    if (this.db.memory) return true;
    try {
      this.fd ??= openSync(`${this.db.name}-shm`, 'r');
      if (readSync(this.fd, this.next, 0, headerBytes, 0) !== headerBytes) return true;
    } catch {
      return true;
    }
    if (this.next.equals(this.last)) return false;
    [this.last, this.next] = [this.next, this.last];
    return true;
  }

  /** Makes the next call answer true (the caller could not act on the change it was told of). */
  forget(): void {
    this.last.fill(0);
  }

  private close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
