/**
 * Flushes a WAL database's log to disk off the event loop.
 *
 * Why: with `synchronous = FULL`, SQLite calls fsync inside COMMIT, and better-sqlite3 runs COMMIT
 * on the event loop, so every request in the process waits for the disk. A transaction committed
 * with `synchronous = NORMAL` instead writes its WAL frames with write() and returns: it survives a
 * crash of the process (the frames are in the kernel), not yet a power cut. `sync()` then runs
 * fdatasync on the WAL file in libuv's thread pool; once it has returned, every frame written
 * before the call is on disk, which is what FULL would have waited for (and SQLite's own rules for
 * NORMAL still sync the WAL before a checkpoint copies it into the database file).
 *
 * Calls that arrive while a flush is running share the next flush: one fdatasync serves every
 * commit made before it starts, however many there were.
 */
import { fdatasync, openSync } from 'node:fs';
import { promisify } from 'node:util';
import type { Database } from 'better-sqlite3';

const fdatasyncAsync = promisify(fdatasync);

export class WalSync {
  private fd: number | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private flushes = 0;

  /** @param db a connection in WAL mode (an in-memory database has nothing to flush) */
  constructor(private readonly db: Database) {}

  /** Resolves once every WAL frame written before this call is on disk. */
  sync(): Promise<void> {
    if (this.db.memory) return Promise.resolve();
    // A flush already running may have started before the caller's frames were written: wait for
    // the next one, which every caller arriving meanwhile shares.
    if (this.running !== undefined) {
      this.queued ??= this.running.then(
        () => this.start(),
        () => this.start(),
      );
      return this.queued;
    }
    return this.start();
  }

  /** fdatasync calls made so far (for tests and benchmarks). */
  get count(): number {
    return this.flushes;
  }

  private start(): Promise<void> {
    this.queued = undefined;
    const running = this.flushOnce().finally(() => {
      if (this.running === running) this.running = undefined;
    });
    this.running = running;
    return running;
  }

  /**
   * One descriptor of the WAL file, opened at the first flush and kept: each flush is then one trip
   * through the thread pool, which matters on a busy server, where every trip waits for a turn of
   * the event loop. fdatasync reaches the file whichever descriptor it goes through, also after
   * the connection closed (its close checkpoints and removes the WAL only when no other process
   * has the database open). A WAL that is gone after the close has nothing left to flush. The
   * descriptor is kept for the life of the process (one per connection).
   */
  private async flushOnce(): Promise<void> {
    if (this.fd === undefined) {
      try {
        this.fd = openSync(`${this.db.name}-wal`, 'r');
      } catch (error) {
        if (!this.db.open && (error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
    }
    this.flushes++;
    await fdatasyncAsync(this.fd);
  }
}
