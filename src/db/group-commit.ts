/**
 * Group commit: writes that arrive together share one transaction and one flush to disk.
 *
 * With `synchronous = FULL` every COMMIT waits for an fsync of the WAL, and that wait, not the SQL,
 * is what a single write costs. `run()` queues a write and answers only after the COMMIT that holds
 * it has returned, i.e. once it is durable. The queue is flushed once per turn of the event loop
 * (`setImmediate`): every request whose body was read in that turn joins the same transaction, and
 * requests that arrive while a COMMIT is flushing (better-sqlite3 commits synchronously, so the
 * event loop is blocked meanwhile) all join the next one. A quiet server still commits each write
 * at once, in the turn it arrived.
 *
 * Each write runs in its own SAVEPOINT (a nested better-sqlite3 transaction), so a write that throws
 * is rolled back alone and rejects only its own promise; its neighbours commit. If the COMMIT
 * itself fails, nothing of the group is durable and every write in it is rejected.
 */
import { setImmediate } from 'node:timers';
import type { Database, Transaction } from 'better-sqlite3';

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

export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  private commits = 0;
  private writes = 0;
  private readonly group: Transaction<(batch: Pending[]) => void>;
  private readonly savepoint: Transaction<(write: () => unknown) => unknown>;

  constructor(db: Database) {
    this.savepoint = db.transaction((write: () => unknown) => write());
    this.group = db.transaction((batch: Pending[]) => {
      for (const pending of batch) {
        try {
          pending.outcome = { ok: true, value: this.savepoint(pending.write) };
        } catch (error) {
          pending.outcome = { ok: false, error };
        }
      }
    });
  }

  /** Runs `write` in the next group; settles once that group's COMMIT has returned. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.flush();
        });
      }
    });
  }

  stats(): GroupCommitStats {
    return { commits: this.commits, writes: this.writes };
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    try {
      // IMMEDIATE: take the write lock first, so another process's writer makes us wait
      // (busy_timeout) at BEGIN instead of failing the group at its first write.
      this.group.immediate(batch);
    } catch (error) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    this.commits++;
    this.writes += batch.length;
    for (const pending of batch) {
      const outcome = pending.outcome;
      if (outcome?.ok === true) pending.resolve(outcome.value);
      else pending.reject(outcome?.error);
    }
  }
}
