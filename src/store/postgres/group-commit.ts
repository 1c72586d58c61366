/**
 * Group commit on PostgreSQL (as src/db/group-commit.ts on SQLite): the API's small writes that
 * arrive together share one transaction, so one COMMIT and one fsync serve all of them. Each
 * write's promise settles once that COMMIT has returned (synchronous commit: on disk), so a write
 * answered 200 survives a crash. PostgreSQL's own group commit (commit_delay) is a server setting
 * netkeep cannot assume; this needs none.
 *
 * The queue is taken once per turn of the event loop; up to `maxGroups` groups run at once, each
 * on its own connection (a group that waits for its fsync does not hold up the next one). Each
 * write runs under a SAVEPOINT: one that fails is rolled back alone and rejects only its own
 * promise. A deadlock between two groups (two writes to the same rows in another order) fails
 * the statement of one; that write is retried under its savepoint. If the transaction itself
 * fails (the connection is lost, the COMMIT fails), every write of the group is rejected.
 */
import { setImmediate } from 'node:timers';
import type pg from 'pg';

interface Pending {
  readonly work: (client: pg.PoolClient) => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
  outcome?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

export interface GroupRunner {
  /** Runs `group` in one write transaction (pool.ts: BEGIN, COMMIT, change tracking). */
  transaction(group: (client: pg.PoolClient) => Promise<void>): Promise<void>;
}

export interface PgGroupCommitStats {
  readonly commits: number;
  readonly writes: number;
}

/** SQLSTATE of a deadlock, and of a serialization failure. */
const retried = new Set(['40P01', '40001']);
const maxAttempts = 3;

export class PgGroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  private running = 0;
  private commits = 0;
  private writes = 0;

  constructor(
    private readonly runner: GroupRunner,
    private readonly maxGroups = 4,
  ) {}

  /** Runs `work` in the next group; settles once that group has committed. */
  run<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  stats(): PgGroupCommitStats {
    return { commits: this.commits, writes: this.writes };
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.maxGroups || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.start();
    });
  }

  private start(): void {
    if (this.running >= this.maxGroups || this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.running++;
    this.runner
      .transaction(async (client) => {
        let saved = false;
        let kept = false;
        for (const pending of batch) {
          for (let attempt = 1; ; attempt++) {
            // One round trip: release the previous write's savepoint (kept) and open this one's.
            // After a failed write, its ROLLBACK TO left the savepoint open: reuse it.
            if (!saved) await client.query('SAVEPOINT w');
            else if (kept) await client.query('RELEASE SAVEPOINT w; SAVEPOINT w');
            saved = true;
            try {
              pending.outcome = { ok: true, value: await pending.work(client) };
              kept = true;
              break;
            } catch (error) {
              // If even this fails, the transaction is lost: the group fails as a whole.
              await client.query('ROLLBACK TO SAVEPOINT w');
              kept = false;
              pending.outcome = { ok: false, error };
              const code = (error as { code?: unknown } | null)?.code;
              if (typeof code !== 'string' || !retried.has(code) || attempt >= maxAttempts) break;
            }
          }
        }
      })
      .then(
        () => {
          this.commits++;
          this.writes += batch.length;
          for (const pending of batch) {
            const outcome = pending.outcome;
            if (outcome?.ok === true) pending.resolve(outcome.value);
            else pending.reject(outcome?.error);
          }
        },
        (error: unknown) => {
          for (const pending of batch) pending.reject(error);
        },
      )
      .finally(() => {
        this.running--;
        this.schedule();
      });
  }
}
