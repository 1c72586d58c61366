/**
 * The kept counts' rule on PostgreSQL (postgres/counts.ts), with a pool whose answers the test
 * releases, so that each order of events is certain: kept between changes, one recount shared by
 * the reads that wait for it, and a recount that a change overtook answered but not kept. (The
 * answers themselves are compared with SQLite's on a real server in device-views-contract.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PostgresDeviceCounts } from '../../../src/store/postgres/counts.js';

interface Pending {
  readonly resolve: (rows: unknown[]) => void;
}

/** A pool that records each query and answers when the test says; `write()` is a committed write. */
function heldPool(): {
  pool: ConstructorParameters<typeof PostgresDeviceCounts>[0];
  queries: Pending[];
  write: () => void;
} {
  const queries: Pending[] = [];
  const listeners = new Set<() => void>();
  const pool = {
    query: <R>(): Promise<R[]> =>
      new Promise<R[]>((resolve) => {
        queries.push({
          resolve: (rows) => {
            resolve(rows as R[]);
          },
        });
      }),
    onWrite: (listener: () => void) => {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  } as unknown as ConstructorParameters<typeof PostgresDeviceCounts>[0];
  return {
    pool,
    queries,
    write: () => {
      for (const listener of listeners) listener();
    },
  };
}

/** `n` online devices that are neither archived, favourites nor new. */
const online = (n: number): unknown[] => [
  { devPresentLastScan: 1, devAlertDown: 0, devIsArchived: 0, devFavorite: 0, devIsNew: 0, n },
];

test('counts are kept until a change, shared while recounted, and an overtaken recount is not kept', async () => {
  const { pool, queries, write } = heldPool();
  const counts = new PostgresDeviceCounts(pool);

  // The first reads share one recount, and the answer is kept.
  const first = [counts.counts(), counts.counts()];
  assert.equal(queries.length, 1);
  queries[0]?.resolve(online(3));
  for (const answer of await Promise.all(first)) assert.equal(answer.connected, 3);
  assert.equal((await counts.counts()).connected, 3);
  assert.equal((await counts.totals()).my, 3);
  assert.equal(queries.length, 1, 'kept: no query per read');

  // A write of this process: the next read recounts.
  write();
  const second = counts.counts();
  assert.equal(queries.length, 2);
  // Another change (a NOTIFY) while that recount runs: it answers its reader, but is not kept.
  counts.invalidate();
  queries[1]?.resolve(online(4));
  assert.equal((await second).connected, 4);
  const third = counts.counts();
  assert.equal(queries.length, 3, 'the overtaken recount was not kept');
  queries[2]?.resolve(online(5));
  assert.equal((await third).connected, 5);
  assert.equal((await counts.counts()).connected, 5);
  assert.equal(queries.length, 3);

  // Closed: the pool's writes are no longer followed.
  counts.close();
  write();
  assert.equal((await counts.counts()).connected, 5);
  assert.equal(queries.length, 3);
});
