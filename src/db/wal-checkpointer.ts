/**
 * Copies a WAL database's log into the database file from a worker thread, not the event loop.
 *
 * Why: SQLite checkpoints inside the COMMIT that takes the WAL past 1,000 frames
 * (`wal_autocheckpoint`). That COMMIT then copies up to 1,000 pages into the database file and
 * flushes both files to disk, on the event loop: 5-11 ms on the bench machine, once every ~900
 * update-column writes, a quarter of the writes' whole SQLite time
 * (docs/benchmarks-history.md). Every request waits meanwhile.
 *
 * How: the connection's own checkpoint is turned off (`wal_autocheckpoint = 0`). A timer looks at
 * the WAL-index (the `-shm` file every connection maps) for frames written and not yet copied,
 * without SQL; from `thresholdFrames` on (4,000 by default), a worker thread with a connection of
 * its own runs a PASSIVE checkpoint (checkpoint-worker.ts). That checkpoint is SQLite's own: it
 * flushes the WAL before it copies and the database file before the WAL may start over, and it
 * never blocks the writer or readers. The worker starts at the first checkpoint, so a database
 * that never gets there (most tests) never starts one.
 *
 * Two passes: the writer starts the WAL over at its next transaction only once all of it is
 * copied, and writes that go on during a checkpoint leave frames behind it; the WAL would grow
 * without end under a steady load. So the first pass copies the bulk while writes go on; then the
 * group commit is paused (`writes`) and a second pass copies the few frames written meanwhile. The
 * event loop runs on through both; only the writes wait for the second pass (at most
 * `lastPassLimitMs`).
 *
 * If the worker cannot start or fails, the connection checkpoints itself again as SQLite does by
 * default; nothing is lost either way, only the event loop holds the copies again.
 */
import { once } from 'node:events';
import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Database } from 'better-sqlite3';
import type { CheckpointOutcome } from './checkpoint-worker.js';

/** The writes the second pass holds back: the connection's group commit. */
export interface PausableWrites {
  pause(): void;
  resume(): void;
}

export interface WalCheckpointerOptions {
  /** Paused for the second pass; without them there is one pass, and the WAL may not start over under a steady load. */
  readonly writes?: PausableWrites;
  /** The longest the writes are held for the second pass, in ms (default 1,000); it runs on after. */
  readonly lastPassLimitMs?: number;
  /** Frames written and not yet copied that start a checkpoint (default `defaultThresholdFrames`). */
  readonly thresholdFrames?: number;
  /** How often the WAL-index is looked at, in ms. Default 100. */
  readonly intervalMs?: number;
  /** Told once when the worker failed and the connection went back to checkpointing itself. */
  readonly onFallback?: (error: Error) => void;
  /** The worker's script; tests pass one that fails. */
  readonly workerScript?: URL;
}

export interface WalCheckpointerStats {
  /** Checkpoints the worker ran. */
  readonly checkpoints: number;
  /** Frames they copied into the database file. */
  readonly framesCopied: number;
  /** Whether the connection checkpoints itself (no worker, or the worker failed). */
  readonly fallenBack: boolean;
}

/** SQLite's default `wal_autocheckpoint`, which the connection gets back when the worker fails. */
const sqliteDefaultAutocheckpoint = 1000;

/**
 * Four times SQLite's own threshold (a WAL of up to ~16 MB; 4,000 frames still fit the WAL-index's
 * first hash table, so a read looks up one table, as before). Why: a page written several times
 * between two checkpoints is copied once, and every checkpoint flushes the database file, a flush
 * the writes' own WAL flushes wait behind. Measured against 1,000 under update-column: 11 of 16
 * interleaved pairs won, +3 % writes/s and 3 µs less CPU per write; 16,000 did no better than
 * 4,000 (docs/benchmarks-history.md).
 */
export const defaultThresholdFrames = 4000;

/**
 * Where the WAL-index keeps the two counts (SQLite's "WAL-mode File Format", unix VFS; native
 * byte order): `mxFrame`, the last valid frame, in the first header copy; `nBackfill`, the frames
 * already copied, first field of the checkpoint information after the two 48-byte header copies.
 */
const mxFrameOffset = 16;
const nBackfillOffset = 96;
const walIndexBytes = nBackfillOffset + 4;

export class WalCheckpointer {
  private readonly thresholdFrames: number;
  private readonly timer: NodeJS.Timeout;
  private readonly walIndex = Buffer.alloc(walIndexBytes);
  private readonly readUInt32: (offset: number) => number;
  private walIndexFd: number | undefined;
  private worker: Worker | undefined;
  /** The pass asked for and not answered yet. */
  private pass: 'none' | 'bulk' | 'last' = 'none';
  /** Ends the hold of the writes if the second pass takes too long. */
  private holdLimit: NodeJS.Timeout | undefined;
  private closed = false;
  private fallenBack = false;
  private checkpoints = 0;
  private framesCopied = 0;

  /** @param db a connection to a database file in WAL mode (not `:memory:`) */
  constructor(
    private readonly db: Database,
    private readonly options: WalCheckpointerOptions = {},
  ) {
    this.thresholdFrames = options.thresholdFrames ?? defaultThresholdFrames;
    this.readUInt32 =
      endianness() === 'LE'
        ? (offset) => this.walIndex.readUInt32LE(offset)
        : (offset) => this.walIndex.readUInt32BE(offset);
    db.pragma('wal_autocheckpoint = 0');
    this.timer = setInterval(() => {
      this.look();
    }, options.intervalMs ?? 100);
    // Never keeps the process alive: the store's close ends it.
    this.timer.unref();
  }

  stats(): WalCheckpointerStats {
    return { checkpoints: this.checkpoints, framesCopied: this.framesCopied, fallenBack: this.fallenBack };
  }

  /** Stops the timer and the worker (after its checkpoint, if one runs). Call before closing the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.releaseWrites();
    this.closeWalIndex();
    const worker = this.worker;
    this.worker = undefined;
    if (worker === undefined) return;
    const exited = once(worker, 'exit');
    worker.postMessage('close');
    await exited;
  }

  /** Frames written and not yet copied, from the WAL-index; undefined when it cannot be read. */
  private pendingFrames(): number | undefined {
    try {
      this.walIndexFd ??= openSync(`${this.db.name}-shm`, 'r');
      if (readSync(this.walIndexFd, this.walIndex, 0, walIndexBytes, 0) !== walIndexBytes) return undefined;
    } catch {
      return undefined;
    }
    // A read races with commits; a torn value only moves one checkpoint a tick earlier or later.
    return this.readUInt32(mxFrameOffset) - this.readUInt32(nBackfillOffset);
  }

  private look(): void {
    if (this.pass !== 'none' || this.closed) return;
    // Closed without the store's close (a test, a tool): nothing is left to checkpoint for.
    if (!this.db.open) {
      void this.close();
      return;
    }
    const pending = this.pendingFrames();
    // No WAL-index yet (nothing written since the database was opened) or none readable.
    if (pending === undefined || pending < this.thresholdFrames) return;
    this.pass = 'bulk';
    try {
      this.startWorker().postMessage('checkpoint');
    } catch (error) {
      this.fallBack(error);
    }
  }

  private passDone(outcome: CheckpointOutcome): void {
    this.checkpoints++;
    this.framesCopied += outcome.busy === 1 ? 0 : outcome.checkpointed;
    const finished = this.pass;
    this.pass = 'none';
    if (finished === 'last') {
      this.releaseWrites();
      return;
    }
    if (this.closed || this.options.writes === undefined) return;
    const left = this.pendingFrames();
    if (left === undefined || left === 0) return;
    // Nothing is being committed now (commits run synchronously): the pause holds every later one.
    this.options.writes.pause();
    this.holdLimit = setTimeout(() => {
      this.releaseWrites();
    }, this.options.lastPassLimitMs ?? 1000);
    this.pass = 'last';
    this.worker?.postMessage('checkpoint');
  }

  private releaseWrites(): void {
    if (this.holdLimit === undefined) return;
    clearTimeout(this.holdLimit);
    this.holdLimit = undefined;
    this.options.writes?.resume();
  }

  private startWorker(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(
      this.options.workerScript ?? new URL('./checkpoint-worker.js', import.meta.url),
      {
        workerData: { file: this.db.name },
        // It holds one connection and no data: a small heap is plenty.
        resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
      },
    );
    worker.on('message', (outcome: CheckpointOutcome) => {
      this.passDone(outcome);
    });
    worker.on('error', (error) => {
      this.fallBack(error);
    });
    worker.on('exit', (code) => {
      if (!this.closed) this.fallBack(new Error(`the checkpoint worker exited (code ${code})`));
    });
    this.worker = worker;
    return worker;
  }

  /** The connection checkpoints itself again, as SQLite does by default. */
  private fallBack(error: unknown): void {
    if (this.fallenBack || this.closed) return;
    this.fallenBack = true;
    this.closed = true;
    clearInterval(this.timer);
    this.releaseWrites();
    this.closeWalIndex();
    if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${sqliteDefaultAutocheckpoint}`);
    void this.worker?.terminate();
    this.worker = undefined;
    this.options.onFallback?.(error instanceof Error ? error : new Error(String(error)));
  }

  private closeWalIndex(): void {
    if (this.walIndexFd !== undefined) closeSync(this.walIndexFd);
    this.walIndexFd = undefined;
  }
}
