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

/**
 * A write that can be done together with the others of its kind (`key`) in one statement: the
 * group runs `runAll` once over their items (under one savepoint) instead of each `work`. If that
 * statement fails, each write runs its own `work` under its own savepoint, so a failing one still
 * fails alone.
 */
export interface Combinable {
  readonly key: string;
  readonly item: unknown;
  /** The result of each item, in order. */
  readonly runAll: (client: pg.PoolClient, items: readonly unknown[]) => Promise<readonly unknown[]>;
}

interface Pending {
  readonly work: (client: pg.PoolClient) => Promise<unknown>;
  readonly combinable: Combinable | undefined;
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
  run<T>(work: (client: pg.PoolClient) => Promise<T>, combinable?: Combinable): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, combinable, resolve: resolve as (value: unknown) => void, reject });
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
        /** Runs `step` under the savepoint w; false (rolled back) when it throws. */
        const underSavepoint = async (step: () => Promise<void>, onError: (error: unknown) => void) => {
          // One round trip: release the previous step's savepoint (kept) and open this one's.
          // After a failed step, its ROLLBACK TO left the savepoint open: reuse it.
          if (!saved) await client.query('SAVEPOINT w');
          else if (kept) await client.query('RELEASE SAVEPOINT w; SAVEPOINT w');
          saved = true;
          try {
            await step();
            kept = true;
            return true;
          } catch (error) {
            // If even this fails, the transaction is lost: the group fails as a whole.
            await client.query('ROLLBACK TO SAVEPOINT w');
            kept = false;
            onError(error);
            return false;
          }
        };
        const single: Pending[] = [];
        for (const kind of combinedKinds(batch, single)) {
          const done = await underSavepoint(
            async () => {
              const results = await kind[0].runAll(
                client,
                kind[1].map((p) => p.combinable?.item),
              );
              kind[1].forEach((pending, i) => {
                pending.outcome = { ok: true, value: results[i] };
              });
            },
            () => undefined,
          );
          if (!done) single.push(...kind[1]);
        }
        for (const pending of single) {
          for (let attempt = 1; attempt <= maxAttempts; attempt++) {
            const done = await underSavepoint(
              async () => {
                pending.outcome = { ok: true, value: await pending.work(client) };
              },
              (error) => {
                pending.outcome = { ok: false, error };
              },
            );
            const error = pending.outcome?.ok === false ? pending.outcome.error : undefined;
            const code = (error as { code?: unknown } | undefined)?.code;
            if (done || typeof code !== 'string' || !retried.has(code)) break;
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

/**
 * The batch's combinable writes by kind, for the kinds with more than one write; every other write
 * goes to `single`, in order.
 */
function combinedKinds(batch: readonly Pending[], single: Pending[]): [Combinable, Pending[]][] {
  const kinds = new Map<string, Pending[]>();
  for (const pending of batch) {
    const key = pending.combinable?.key;
    if (key === undefined) continue;
    const list = kinds.get(key) ?? [];
    list.push(pending);
    kinds.set(key, list);
  }
  const combined: [Combinable, Pending[]][] = [];
  for (const pending of batch) {
    const list = pending.combinable === undefined ? undefined : kinds.get(pending.combinable.key);
    if (list === undefined || list.length < 2) single.push(pending);
    else if (list[0] === pending && pending.combinable !== undefined)
      combined.push([pending.combinable, list]);
  }
  return combined;
}
