/**
 * Group commit: writes that arrive together share one transaction and one flush to disk.
 *
 * `run()` queues a write and answers only once the transaction that holds it is on disk. The queue
 * is flushed once per turn of the event loop (`setImmediate`): every request whose body was read in
 * that turn joins the same transaction. The transaction commits with `synchronous = NORMAL` (its WAL
 * frames are written, not yet flushed), and the flush to disk runs in the thread pool (`WalSync`),
 * so the event loop serves other requests meanwhile and the next group can already commit; one
 * flush serves every group committed before it started. A quiet server still commits and flushes
 * each write at once. Everything else on the connection keeps `synchronous = FULL`.
 *
 * When no group is waiting for a flush (the disk is idle) and `earlyGroup` writes are queued, they
 * commit at once instead of at the end of the turn, and their flush starts while the event loop
 * reads the rest. Why: clients that all wait for one flush are all answered together and all send
 * their next writes together; committed in one group at the end of the turn, those writes then
 * wait for a flush during which the event loop has nothing to do (a quarter of the time at 32
 * connections, docs/benchmarks-history.md). Committing the first ones early splits the clients
 * into two halves, so one half's flush runs while the other half's requests are read. While a
 * group waits for a flush, the next group waits for the next flush whenever it commits: nothing
 * changes then.
 *
 * Each write runs in its own SAVEPOINT (a nested better-sqlite3 transaction), so a write that throws
 * is rolled back alone and rejects only its own promise; its neighbours commit. If the COMMIT or the
 * flush fails, the group is not known to be durable and every write in it is rejected; after a
 * failed flush no further write is taken (see `broken`).
 */
import { setImmediate } from 'node:timers';
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { WalSync } from './wal-sync.js';

interface Pending {
  readonly write: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
  outcome?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

export interface GroupCommitStats {
  /** Transactions committed. */
  readonly commits: number;
  /** Writes that went through them. */
  readonly writes: number;
}

export interface GroupCommitOptions {
  /**
   * Makes the committed groups durable; the default flushes the connection's WAL file in the
   * thread pool. Tests pass their own to hold a flush or make it fail.
   */
  readonly flush?: () => Promise<void>;
  /** Queued writes that commit at once, before the end of the turn, when no group waits for a flush. */
  readonly earlyGroup?: number;
}

/**
 * Half of the bench's 32 connections: their writes then go in two groups of 16, one flushed while
 * the other is read. Fewer concurrent writers never reach it and keep one group per turn.
 */
export const defaultEarlyGroup = 16;

export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  /** Set by pause(): queued writes wait for resume(). */
  private paused = false;
  /** Groups committed whose flush has not ended yet. */
  private unflushed = 0;
  private commits = 0;
  private writes = 0;
  private readonly group: Transaction<(batch: Pending[]) => void>;
  private readonly savepoint: Transaction<(write: () => unknown) => unknown>;
  private readonly commitWithoutFlush: Statement<[]>;
  private readonly commitWithFlush: Statement<[]>;
  private readonly flushToDisk: () => Promise<void>;
  private readonly earlyGroup: number;
  /**
   * Set once a flush to disk failed. Linux reports a write-back error once and may then mark the
   * pages clean, so a later flush could succeed without the lost frames; SQLite's recovery would
   * then drop everything after them. No write is taken after that: the server must be restarted.
   */
  private broken: Error | undefined;

  constructor(
    private readonly db: Database,
    options: GroupCommitOptions = {},
  ) {
    this.savepoint = db.transaction((write: () => unknown) => write());
    this.group = db.transaction((batch: Pending[]) => {
      for (const pending of batch) {
        try {
          pending.outcome = { ok: true, value: this.savepoint(pending.write) };
        } catch (error) {
          pending.outcome = { ok: false, error };
          // Some errors (a full disk, an I/O error) roll back the whole transaction, not only
          // the savepoint: the writes after it would then each commit on their own. Stop; the
          // COMMIT then fails and the whole group is refused, as nothing of it was kept.
          if (!db.inTransaction) throw error;
        }
      }
    });
    this.commitWithoutFlush = db.prepare('PRAGMA synchronous = NORMAL');
    this.commitWithFlush = db.prepare('PRAGMA synchronous = FULL');
    const wal = new WalSync(db);
    this.flushToDisk = options.flush ?? (() => wal.sync());
    this.earlyGroup = options.earlyGroup ?? defaultEarlyGroup;
  }

  /** Runs `write` in the next group; settles once that group is committed and on disk. */
  run<T>(write: () => T): Promise<T> {
    if (this.broken !== undefined) return Promise.reject(this.broken);
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      // Never inside a transaction of the connection: the group would become part of it.
      if (
        this.queue.length >= this.earlyGroup &&
        this.unflushed === 0 &&
        !this.paused &&
        !this.db.inTransaction
      ) {
        this.commitQueued();
        return;
      }
      this.schedule();
    });
  }

  /**
   * Holds the queued writes (and those still to come) until `resume()`; the event loop goes on
   * meanwhile. The WAL checkpointer's last pass runs while the writes are held, so that it copies
   * the whole WAL and the next commit can start the WAL over (wal-checkpointer.ts).
   */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    if (this.queue.length > 0) this.schedule();
  }

  /** Commits the queue at the end of this turn of the event loop (unless paused by then). */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.paused) this.commitQueued();
    });
  }

  stats(): GroupCommitStats {
    return { commits: this.commits, writes: this.writes };
  }

  /** Commits every queued write as one group and hands the group to the flush. */
  private commitQueued(): void {
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    try {
      // The pragma changes only how the next COMMIT syncs; it is restored before anything else
      // on the connection can run (all of this is synchronous).
      this.commitWithoutFlush.run();
      // IMMEDIATE: take the write lock first, so another process's writer makes us wait
      // (busy_timeout) at BEGIN instead of failing the group at its first write.
      this.group.immediate(batch);
    } catch (error) {
      for (const pending of batch) pending.reject(error);
      return;
    } finally {
      this.commitWithFlush.run();
    }
    this.commits++;
    this.writes += batch.length;
    this.unflushed++;
    this.flushToDisk().then(
      () => {
        this.unflushed--;
        for (const pending of batch) {
          const outcome = pending.outcome;
          if (outcome?.ok === true) pending.resolve(outcome.value);
          else pending.reject(outcome?.error);
        }
      },
      (error: unknown) => {
        this.unflushed--;
        this.broken ??= new Error(
          `Writing to disk failed (${String(error)}); restart netkeep to write again.`,
        );
        for (const pending of batch) pending.reject(error);
      },
    );
  }
}
