/**
 * Change tracking on PostgreSQL: a server's change readers see its own commits before the write
 * settles (exactly the devices the change triggers marked), another server's commits through the
 * change log, nothing of a rolled-back write.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DeviceJsonCache } from '../../../src/devices/view-cache.js';
import type { ChangeReader, Changes, DeviceStore } from '../../../src/store/devices.js';
import { openPostgres, type PostgresPool } from '../../../src/store/postgres/pool.js';
import { openPostgresStore, type PostgresStore } from '../../../src/store/postgres/store.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL change tracking tests');

const asList = (changes: Changes): string[] | 'all' => (changes === 'all' ? 'all' : [...changes].sort());
/** What the reader's latest poll handed as only seen again: [MAC, new devLastConnection]. */
const seenOf = (reader: ChangeReader): [string, string][] => [...(reader.lastSeen?.() ?? [])];

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
  /** A server that reads the change log only on a hint (its timer: once in ten minutes). */
  let hinted: PostgresStore;
  /** A writer with no change log and no listener: it never sends a hint. */
  let silent: PostgresPool;

  before(async () => {
    requireAll(postgresMissing());
    pg = await startPostgres();
    a = await openPostgresStore(pg.url, { serverId: 'server-a' });
    b = await openPostgresStore(pg.url, { serverId: 'server-b' });
    hinted = await openPostgresStore(pg.url, { serverId: 'server-hinted', changeLogPollMs: 600_000 });
    silent = await openPostgres(pg.url, { serverId: 'server-silent' });
  });
  after(async () => {
    await silent.close();
    await hinted.close();
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
  test('the Devices update trigger compares every column but devLastConnection (and the MAC it joins on)', async () => {
    const columns = (
      await a.pool.query<{ column_name: string }>(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'Devices'",
      )
    ).map((row) => row.column_name);
    assert.ok(columns.length > 30, columns.join());
    const [source] = await a.pool.query<{ prosrc: string }>(
      "SELECT prosrc FROM pg_proc WHERE proname = 'netkeep_note_device_updates'",
    );
    const sql = source?.prosrc ?? '';
    for (const column of columns) {
      const compared = sql.split(`n."${column}" IS NOT DISTINCT FROM o."${column}"`).length - 1;
      const expected = column === 'devLastConnection' || column === 'devMac' ? 0 : 1;
      assert.equal(compared, expected, `${column} in ${sql}`);
    }
  });

  test('a device only seen again (devLastConnection alone) is handed with its new value, here and on the other server', async () => {
    const mac = 'cc:00:00:00:00:01';
    const mine = a.devices.changeReader();
    const theirs = b.devices.changeReader();
    /** Both servers' readers report the device; `seen`: what they hand as only seen again. */
    const bothReport = async (seen: [string, string][]): Promise<void> => {
      assert.deepEqual(asList(mine.poll()), [mac]);
      assert.deepEqual(seenOf(mine), seen);
      assert.deepEqual(await nextChanges(() => theirs.poll()), [mac]);
      assert.deepEqual(seenOf(theirs), seen);
    };
    const seenAt = 'UPDATE "Devices" SET "devLastConnection" = $1 WHERE "devMac" = $2';
    assert.equal(await a.devices.create(mac, { devLastIP: '10.0.0.1' }, new Date()), 'created');
    // Both have taken the creation in (read with a later seen-only change, it would win over it).
    await bothReport([]);

    // What a scan cycle writes for a device seen again (the presence store's update).
    await a.pool.query(
      `UPDATE "Devices" SET "devPresentLastScan" = "devPresentLastScan", "devLastIP" = "devLastIP", "devLastConnection" = '2024-06-15 11:59:00' WHERE "devMac" = $1`,
      [mac],
    );
    await bothReport([[mac, '2024-06-15T11:59:00Z']]);
    // Another column as well: changed, no value handed.
    await a.pool.query(
      `UPDATE "Devices" SET "devLastConnection" = '2024-06-15 11:59:30', "devLastIP" = '10.0.0.9' WHERE "devMac" = $1`,
      [mac],
    );
    await bothReport([]);
    // Seen, then changed otherwise, then seen again, in one transaction: changed.
    await a.pool.transaction(async (client) => {
      await client.query(seenAt, ['2024-06-15 11:59:40', mac]);
      await client.query(`UPDATE "Devices" SET "devOwner" = 'someone' WHERE "devMac" = $1`, [mac]);
      await client.query(seenAt, ['2024-06-15 11:59:50', mac]);
    });
    await bothReport([]);
    // Seen twice in one transaction: the later value.
    await a.pool.transaction(async (client) => {
      await client.query(seenAt, ['2024-06-15 12:00:00', mac]);
      await client.query(seenAt, ['2024-06-15 12:00:10', mac]);
    });
    assert.deepEqual(seenOf(a.devices.changeReader()), [], 'a new reader has nothing');
    await bothReport([[mac, '2024-06-15T12:00:10Z']]);
    // The time cleared: changed.
    await a.pool.query(`UPDATE "Devices" SET "devLastConnection" = NULL WHERE "devMac" = $1`, [mac]);
    await bothReport([]);
  });

  test('the GET cache keeps an answer only seen again, byte for byte the uncached one, whichever server wrote', async () => {
    const mac = 'cc:00:00:00:00:02';
    const neighbour = 'cc:00:00:00:00:03';
    const at = new Date(Date.UTC(2024, 5, 15, 12, 0, 0));
    assert.equal(
      await a.devices.create(mac, { devComments: 'quotes "devLastConnection":"x" inside' }, at),
      'created',
    );
    assert.equal(await a.devices.create(neighbour, {}, at), 'created');
    let computed = 0;
    const counting = Object.create(a.devices) as DeviceStore;
    counting.getTimed = (...args: Parameters<DeviceStore['getTimed']>) => {
      computed++;
      return a.devices.getTimed(...args);
    };
    const cache = new DeviceJsonCache(counting);
    const sameAsUncached = async (device: string): Promise<string> => {
      const text = await cache.get(device, 'all', at);
      assert.equal(text, JSON.stringify((await a.devices.getTimed(device, 'all', at))?.view), device);
      return text;
    };
    await sameAsUncached(mac);
    await sameAsUncached(neighbour);
    const misses = computed;
    // This server (its scanner) sees the device again.
    await a.pool.query(
      `UPDATE "Devices" SET "devLastConnection" = '2024-06-15 11:59:00' WHERE "devMac" = $1`,
      [mac],
    );
    assert.ok((await sameAsUncached(mac)).includes('"devLastConnection":"2024-06-15T11:59:00Z"'));
    assert.equal(computed, misses, 'kept, with the new time');
    // Another server does.
    await b.pool.query(
      `UPDATE "Devices" SET "devLastConnection" = '2024-06-15 11:59:30' WHERE "devMac" = $1`,
      [mac],
    );
    for (let i = 0; i < 400; i++) {
      if ((await cache.get(mac, 'all', at))?.includes('11:59:30') === true) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.ok((await sameAsUncached(mac)).includes('"devLastConnection":"2024-06-15T11:59:30Z"'));
    await sameAsUncached(neighbour);
    assert.equal(computed, misses, "no answer was read again, the neighbour's neither");
    // Anything else: read again.
    await b.pool.query(
      `UPDATE "Devices" SET "devLastConnection" = '2024-06-15 11:59:40', "devVendor" = 'v' WHERE "devMac" = $1`,
      [mac],
    );
    for (let i = 0; i < 400 && computed === misses; i++) {
      await cache.get(mac, 'all', at);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.ok((await sameAsUncached(mac)).includes('"devVendor":"v"'));
    assert.equal(computed, misses + 1, 'read again once');
  });

  test("another server's older 'seen' value, read from the log after this server's newer one, does not win", async () => {
    const mac = 'cc:00:00:00:00:04';
    const hint = 'cc:00:00:00:00:05';
    const at = new Date(Date.UTC(2024, 5, 15, 12, 0, 0));
    const seenAt = 'UPDATE "Devices" SET "devLastConnection" = $1 WHERE "devMac" = $2';
    assert.equal(await hinted.devices.create(mac, {}, at), 'created');
    const cache = new DeviceJsonCache(hinted.devices);
    const waiter = hinted.devices.changeReader();
    await cache.get(mac, 'all', at);
    // The silent server commits first (no hint: this server has not read its row yet), then this
    // server, later and newer: its own commit is handed at once.
    await silent.query(seenAt, ['2024-06-15 11:59:00', mac]);
    await hinted.pool.query(seenAt, ['2024-06-15 11:59:30', mac]);
    assert.ok(
      (await cache.get(mac, 'all', at))?.includes('"devLastConnection":"2024-06-15T11:59:30Z"') === true,
    );
    // Another server's hint: this one reads the log, where both rows are, in commit order.
    assert.equal(await b.devices.create(hint, {}, at), 'created');
    for (let i = 0; i < 400; i++) {
      const changes = waiter.poll();
      if (changes === 'all' || changes.has(hint)) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const answer = (await cache.get(mac, 'all', at)) ?? '';
    assert.equal(answer, JSON.stringify((await hinted.devices.getTimed(mac, 'all', at))?.view));
    assert.ok(answer.includes('"devLastConnection":"2024-06-15T11:59:30Z"'), answer);
  });
});
