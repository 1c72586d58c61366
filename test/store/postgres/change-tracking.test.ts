/**
 * Change tracking on PostgreSQL: a server's change readers see its own commits before the write
 * settles (exactly the devices the change triggers marked), another server's commits through the
 * change log, nothing of a rolled-back write.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Changes } from '../../../src/store/devices.js';
import { openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL change tracking tests');

const asList = (changes: Changes): string[] | 'all' => (changes === 'all' ? 'all' : [...changes].sort());

/** Polls `reader` until it reports something (bounded), and returns what it reported. */
async function nextChanges(poll: () => Changes): Promise<string[] | 'all'> {
  for (let i = 0; i < 400; i++) {
    const changes = poll();
    if (changes === 'all' || changes.size > 0) return asList(changes);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return [];
}

describe('PostgreSQL change tracking', { skip }, () => {
  let pg: PostgresServer;
  let a: PostgresStore;
  let b: PostgresStore;

  before(async () => {
    requireAll(postgresMissing());
    pg = await startPostgres();
    a = await openPostgresStore(pg.url, { serverId: 'server-a' });
    b = await openPostgresStore(pg.url, { serverId: 'server-b' });
  });
  after(async () => {
    await a.close();
    await b.close();
    await pg.stop();
  });

  test("a server's own write is in its readers when the write settles; the other server hears it", async () => {
    const mine = a.devices.changeReader();
    const theirs = b.devices.changeReader();
    assert.equal(await a.devices.create('aa:00:00:00:00:01', {}, new Date()), 'created');
    assert.deepEqual(asList(mine.poll()), ['aa:00:00:00:00:01']);
    assert.deepEqual(asList(mine.poll()), [], 'a poll drains');
    assert.deepEqual(await nextChanges(() => theirs.poll()), ['aa:00:00:00:00:01']);

    // A child's write marks its parent (devChildrenDynamic), as SQLite's triggers do.
    assert.equal(
      await b.devices.create('aa:00:00:00:00:02', { devParentMAC: 'aa:00:00:00:00:01' }, new Date()),
      'created',
    );
    assert.deepEqual(await nextChanges(() => mine.poll()), ['aa:00:00:00:00:01', 'aa:00:00:00:00:02']);
    // On the writing server, its own readers have it at once.
    assert.deepEqual(asList(theirs.poll()), ['aa:00:00:00:00:01', 'aa:00:00:00:00:02']);

    // A write outside a transaction (resetProps is one statement) is tracked too.
    assert.equal(await a.devices.resetProps('aa:00:00:00:00:02'), true);
    assert.deepEqual(asList(mine.poll()), ['aa:00:00:00:00:01', 'aa:00:00:00:00:02']);
    assert.deepEqual(await nextChanges(() => theirs.poll()), ['aa:00:00:00:00:01', 'aa:00:00:00:00:02']);
  });

  test('a rolled-back write is reported to nobody; a statement of many devices is reported exactly to all', async () => {
    const mine = a.devices.changeReader();
    const theirs = b.devices.changeReader();
    await assert.rejects(
      a.pool.transaction(async (client) => {
        await client.query(`UPDATE "Devices" SET "devName" = 'x' WHERE "devMac" = 'aa:00:00:00:00:01'`);
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    assert.deepEqual(asList(mine.poll()), []);
    // Many devices in one statement (more than a NOTIFY payload could carry): the change log
    // holds them all.
    await a.pool.query(
      `INSERT INTO "ScanState" ("mac") SELECT 'bb:00:00:00:' || lpad(to_hex(i / 256), 2, '0') || ':' || lpad(to_hex(i % 256), 2, '0')
       FROM generate_series(1, 600) AS i`,
    );
    const own = asList(mine.poll());
    assert.equal(own === 'all' ? 'all' : own.length, 600, 'the writer knows each device exactly');
    const other = await nextChanges(() => theirs.poll());
    assert.equal(other === 'all' ? 'all' : other.length, 600, 'the other server too');
  });
});
