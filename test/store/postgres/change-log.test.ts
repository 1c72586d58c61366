/**
 * The change log between servers (change-log.ts) and the group commit of small writes
 * (group-commit.ts) on PostgreSQL: a change is not lost when its hint is (the writer died after
 * its commit), nor when transactions commit in another order than they began; a failing write in
 * a group fails alone; the writes of one turn share one transaction.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Changes } from '../../../src/store/devices.js';
import { openPostgres, type PostgresPool } from '../../../src/store/postgres/pool.js';
import { openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL change log tests');

const asList = (changes: Changes): string[] | 'all' => (changes === 'all' ? 'all' : [...changes].sort());

/** Polls `poll` until it has reported every one of `macs` (bounded); what it reported. */
async function collect(poll: () => Changes, macs: readonly string[]): Promise<Set<string> | 'all'> {
  const got = new Set<string>();
  for (let i = 0; i < 500; i++) {
    const changes = poll();
    if (changes === 'all') return 'all';
    for (const mac of changes) got.add(mac);
    if (macs.every((mac) => got.has(mac))) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return got;
}

describe('the PostgreSQL change log and group commit', { skip }, () => {
  let pg: PostgresServer;
  let a: PostgresStore;
  let b: PostgresStore;
  /** A writer with no change log and no listener: it never sends a hint (a server that died). */
  let silent: PostgresPool;

  before(async () => {
    requireAll(postgresMissing());
    pg = await startPostgres();
    a = await openPostgresStore(pg.url, { serverId: 'server-a' });
    // B reads the log on its timer every 100 ms besides the hints.
    b = await openPostgresStore(pg.url, { serverId: 'server-b', changeLogPollMs: 100 });
    silent = await openPostgres(pg.url, { serverId: 'server-dead' });
    const seen = b.devices.changeReader();
    const macs = [1, 2, 3, 4, 5].map((i) => `cc:00:00:00:00:0${i}`);
    for (const mac of macs) assert.equal(await a.devices.create(mac, {}, new Date()), 'created');
    // B has read them all before the tests begin.
    assert.deepEqual(await collect(() => seen.poll(), macs), new Set(macs));
  });
  after(async () => {
    await silent.close();
    await a.close();
    await b.close();
    await pg.stop();
  });

  test('a write whose server never hinted reaches the others by the log', async () => {
    const theirs = b.devices.changeReader();
    theirs.poll();
    await silent.query(`UPDATE "Devices" SET "devComments" = 'no hint' WHERE "devMac" = 'cc:00:00:00:00:01'`);
    assert.deepEqual(
      await collect(() => theirs.poll(), ['cc:00:00:00:00:01']),
      new Set(['cc:00:00:00:00:01']),
    );
  });

  test('transactions committing out of order: the later commit of the earlier one is not skipped', async () => {
    const theirs = b.devices.changeReader();
    theirs.poll();
    const early = await silent.connect();
    try {
      await early.query('BEGIN');
      // Its transaction id is taken now, before the next write's.
      await early.query(`UPDATE "Devices" SET "devComments" = 'early' WHERE "devMac" = 'cc:00:00:00:00:02'`);
      await silent.query(`UPDATE "Devices" SET "devComments" = 'late' WHERE "devMac" = 'cc:00:00:00:00:03'`);
      // B has read past the later write (a row of a higher id and xid) while the early one is open.
      assert.deepEqual(
        await collect(() => theirs.poll(), ['cc:00:00:00:00:03']),
        new Set(['cc:00:00:00:00:03']),
      );
      await early.query('COMMIT');
    } finally {
      early.release();
    }
    assert.deepEqual(
      await collect(() => theirs.poll(), ['cc:00:00:00:00:02']),
      new Set(['cc:00:00:00:00:02']),
    );
  });

  test('writes of one turn share one transaction; a failing one fails alone and leaves nothing', async () => {
    const mine = a.devices.changeReader();
    const theirs = b.devices.changeReader();
    const before = a.pool.groupStats();
    const results = await Promise.allSettled([
      a.devices.update('cc:00:00:00:00:04', { devComments: 'kept 4' }),
      // A parent loop is refused after the first statement of the write ran.
      a.devices.update('cc:00:00:00:00:01', { devParentMAC: 'cc:00:00:00:00:01' }),
      a.pool.grouped(async (client) => {
        await client.query(
          `UPDATE "Devices" SET "devComments" = 'half' WHERE "devMac" = 'cc:00:00:00:00:03'`,
        );
        await client.query('SELECT 1/0'); // a failing statement after a write: rolled back alone
      }),
      a.devices.update('cc:00:00:00:00:05', { devComments: 'kept 5' }),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : undefined)),
      [true, undefined, undefined, true],
    );
    const after = a.pool.groupStats();
    assert.equal(after.writes - before.writes, 4);
    assert.equal(after.commits - before.commits, 1, 'one transaction for the four writes');
    const rows = await a.pool.query<{ devMac: string; devComments: string; devParentMAC: string }>(
      `SELECT "devMac", "devComments", "devParentMAC" FROM "Devices" WHERE "devMac" LIKE 'cc:%' ORDER BY 1`,
    );
    assert.deepEqual(
      rows.map((r) => [r.devMac, r.devComments, r.devParentMAC]),
      [
        ['cc:00:00:00:00:01', 'no hint', ''],
        ['cc:00:00:00:00:02', 'early', ''],
        ['cc:00:00:00:00:03', 'late', ''],
        ['cc:00:00:00:00:04', 'kept 4', ''],
        ['cc:00:00:00:00:05', 'kept 5', ''],
      ],
    );
    // The writer's readers have exactly what was kept when the writes settle; the other server too.
    assert.deepEqual(asList(mine.poll()), ['cc:00:00:00:00:04', 'cc:00:00:00:00:05']);
    assert.deepEqual(
      await collect(() => theirs.poll(), ['cc:00:00:00:00:04', 'cc:00:00:00:00:05']),
      new Set(['cc:00:00:00:00:04', 'cc:00:00:00:00:05']),
    );
  });

  test('writes done together in one statement: when it fails, each is done alone, and its partial work is undone', async () => {
    const failingTogether = {
      key: 'test:together',
      runAll: async (client: import('pg').PoolClient): Promise<never> => {
        await client.query(`UPDATE "Devices" SET "devComments" = 'together' WHERE "devMac" LIKE 'cc:%'`);
        throw new Error('the statement for all failed');
      },
    };
    const alone = (mac: string) => async (client: import('pg').PoolClient) => {
      await client.query(`UPDATE "Devices" SET "devComments" = 'alone' WHERE "devMac" = $1`, [mac]);
      return mac;
    };
    const before = a.pool.groupStats();
    const results = await Promise.all([
      a.pool.grouped(alone('cc:00:00:00:00:04'), { ...failingTogether, item: 4 }),
      a.pool.grouped(alone('cc:00:00:00:00:05'), { ...failingTogether, item: 5 }),
    ]);
    assert.deepEqual(results, ['cc:00:00:00:00:04', 'cc:00:00:00:00:05']);
    assert.equal(a.pool.groupStats().commits - before.commits, 1);
    const rows = await a.pool.query<{ devComments: string }>(
      `SELECT "devComments" FROM "Devices" WHERE "devMac" LIKE 'cc:%' ORDER BY "devMac"`,
    );
    assert.deepEqual(
      rows.map((r) => r.devComments),
      ['no hint', 'early', 'late', 'alone', 'alone'],
    );
    // And update-column's writes of one kind, done together: the last write of a device wins.
    const updates = await Promise.all([
      a.devices.update('cc:00:00:00:00:01', { devComments: 'first' }),
      a.devices.update('cc:00:00:00:00:01', { devComments: 'second' }),
      a.devices.update('cc:00:00:00:00:09', { devComments: 'nobody' }),
    ]);
    assert.deepEqual(updates, [true, true, false]);
    const one = await a.pool.query<{ devComments: string }>(
      `SELECT "devComments" FROM "Devices" WHERE "devMac" = 'cc:00:00:00:00:01'`,
    );
    assert.equal(one[0]?.devComments, 'second');
  });
});
