import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { DeviceJsonCache } from '../../src/devices/view-cache.js';
import { history, seedHistory } from './history.js';

describe('DeviceJsonCache gives exactly the uncached answer', () => {
  let dir: string;
  let db: Database;
  let repo: SqliteDevices;
  let store: SqliteDeviceStore;
  let cache: DeviceJsonCache;
  const mac = '02:00:00:00:0c:01';
  const now = Date.UTC(2024, 5, 15, 12, 0, 0);
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'netkeep-cache-'));
    db = openDatabase(join(dir, 'netkeep.db'));
    repo = new SqliteDevices(db);
    store = new SqliteDeviceStore(repo);
    cache = new DeviceJsonCache(store);
    assert.equal(
      repo.create(mac, { devComments: 'quotes "devPresenceHours":1 inside' }, new Date(now)),
      'created',
    );
    seedHistory(db, mac, history(now));
  });
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The cached text, parsed, next to the repository's uncached view at the same time. */
  async function both(at: number): Promise<{ cached: unknown; direct: unknown }> {
    const text = await cache.get(mac, 'all', new Date(at));
    assert.ok(text !== undefined);
    return { cached: JSON.parse(text), direct: repo.get(mac, 'all', new Date(at)) };
  }

  test('a hit equals the queries, also hours later while a session is open', async () => {
    const first = await both(now);
    assert.deepEqual(first.cached, first.direct);
    const later = await both(now + 3 * 3_600_000 + 17_000);
    assert.deepEqual(later.cached, later.direct);
    assert.notDeepEqual(later.cached, first.cached, 'the open session grew');
  });

  test('a write on this connection is seen by the next read', async () => {
    await both(now);
    assert.ok(repo.update(mac, { devName: 'renamed' }));
    const { cached, direct } = await both(now);
    assert.deepEqual(cached, direct);
    assert.equal((cached as { devName: string }).devName, 'renamed');
  });

  test('a commit by another connection (another process, the sqlite3 CLI) is seen by the next read', async () => {
    const before = (await both(now)).cached as { devDownAlerts: number };
    const other = openDatabase(join(dir, 'netkeep.db'));
    other
      .prepare(
        "INSERT INTO Events (eve_MAC, eve_DateTime, eve_EventType) VALUES (?, '2024-06-15 11:00:00', 'Device Down')",
      )
      .run(mac);
    other.close();
    const { cached, direct } = await both(now);
    assert.deepEqual(cached, direct);
    assert.equal((cached as { devDownAlerts: number }).devDownAlerts, before.devDownAlerts + 1);
  });

  test('a change taken in by another request while a miss reads is not lost', async () => {
    /** A store whose next read waits for `gate` after reading, as a PostgreSQL round trip would. */
    class GatedStore extends SqliteDeviceStore {
      gate: Promise<void> | undefined;
      /** Called once the gated read is made. */
      onRead = (): void => undefined;
      override async getTimed(
        ...args: Parameters<SqliteDeviceStore['getTimed']>
      ): ReturnType<SqliteDeviceStore['getTimed']> {
        const timed = await super.getTimed(...args);
        const gate = this.gate;
        this.gate = undefined;
        if (gate !== undefined) {
          this.onRead();
          await gate;
        }
        return timed;
      }
    }
    const gated = new GatedStore(repo);
    const gatedCache = new DeviceJsonCache(gated);
    let release = (): void => undefined;
    gated.gate = new Promise((resolve) => {
      release = resolve;
    });
    const read = new Promise<void>((resolve) => {
      gated.onRead = resolve;
    });
    const reading = gatedCache.get(mac, 'all', new Date(now));
    await read;
    // While it reads: another process renames the device, and another request takes that in.
    const other = openDatabase(join(dir, 'netkeep.db'));
    other.prepare("UPDATE Devices SET devName = 'renamed meanwhile' WHERE devMac = ?").run(mac);
    other.close();
    assert.ok((await gatedCache.get('02:00:00:00:0c:98', 'all', new Date(now))) === undefined);
    release();
    assert.ok(!(await reading)?.includes('renamed meanwhile'), 'the answer read before the change');
    const after = await gatedCache.get(mac, 'all', new Date(now));
    assert.equal((JSON.parse(after ?? '{}') as { devName: string }).devName, 'renamed meanwhile');
  });

  test('a device that does not exist is undefined, and is not remembered', async () => {
    const absent = '02:00:00:00:0c:99';
    assert.equal(await cache.get(absent, 'all', new Date(now)), undefined);
    assert.equal(repo.create(absent, {}, new Date(now)), 'created');
    assert.ok((await cache.get(absent, 'all', new Date(now))) !== undefined);
  });

  test('an alias is answered with its device, read once, and follows merges and splits', async () => {
    const device = '02:00:00:00:0d:01';
    const alias = '02:00:00:00:0d:02';
    const other = '02:00:00:00:0d:03';
    const at = new Date(now);
    for (const each of [device, alias, other]) assert.equal(repo.create(each, {}, at), 'created');
    repo.merge(device, alias, at);
    let reads = 0;
    const counting = Object.create(store) as SqliteDeviceStore;
    counting.getTimed = (...args) => {
      reads++;
      return store.getTimed(...args);
    };
    counting.resolveMac = (...args) => {
      reads++;
      return store.resolveMac(...args);
    };
    const aliasCache = new DeviceJsonCache(counting);
    /** The answer to a GET of `alias`: the uncached answer of `owner`. */
    const answersAs = async (owner: string): Promise<void> => {
      const text = await aliasCache.get(alias, 'all', at);
      assert.deepEqual(JSON.parse(text ?? 'null'), repo.get(owner, 'all', at));
    };
    await answersAs(device);
    const firstReads = reads;
    await answersAs(device);
    assert.equal(reads, firstReads, 'the second GET by alias reads nothing');
    // Its device merged into another: the alias moves with it.
    repo.merge(other, device, at);
    await answersAs(other);
    // Split off: the alias is a device of its own.
    repo.split(other, alias, at);
    await answersAs(alias);
    // Its device (a change of this device only, not of its aliases) is answered anew.
    repo.merge(other, alias, at);
    await answersAs(other);
    assert.ok(repo.update(other, { devName: 'renamed' }));
    await answersAs(other);
  });

  test('the cache is bounded in characters: an entry that would pass maxChars drops the oldest entry', async () => {
    let computed = 0;
    const counting: SqliteDeviceStore = Object.create(store) as SqliteDeviceStore;
    counting.getTimed = (...args: Parameters<SqliteDeviceStore['getTimed']>) => {
      computed++;
      return store.getTimed(...args);
    };
    const other = '02:00:00:00:0c:03';
    assert.equal(repo.create(other, {}, new Date(now)), 'created');
    const oneDevice = ((await cache.get(mac, 'all', new Date(now))) ?? '').length;
    const small = new DeviceJsonCache(counting, Math.floor(oneDevice * 1.5));
    const at = new Date(now);
    await small.get(mac, 'all', at);
    await small.get(mac, 'all', at);
    assert.equal(computed, 1, 'the second read is a hit');
    await small.get(other, 'all', at); // would pass the bound: the entry cached first is dropped
    await small.get(other, 'all', at);
    assert.equal(computed, 2);
    await small.get(mac, 'all', at);
    assert.equal(computed, 3, 'the first device was dropped');
  });
});

describe('DeviceJsonCache after another process moves only a last-connection time', () => {
  let dir: string;
  let file: string;
  let db: Database;
  let other: Database;
  let repo: SqliteDevices;
  let counting: SqliteDeviceStore;
  let computed: number;
  let cache: DeviceJsonCache;
  const mac = '02:00:00:00:0d:01';
  const neighbour = '02:00:00:00:0d:02';
  const now = Date.UTC(2024, 5, 15, 12, 0, 0);
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'netkeep-cache-seen-'));
    file = join(dir, 'netkeep.db');
    db = openDatabase(file);
    other = openDatabase(file);
    repo = new SqliteDevices(db);
    const store = new SqliteDeviceStore(repo);
    computed = 0;
    counting = Object.create(store) as SqliteDeviceStore;
    counting.getTimed = (...args: Parameters<SqliteDeviceStore['getTimed']>) => {
      computed++;
      return store.getTimed(...args);
    };
    cache = new DeviceJsonCache(counting);
    assert.equal(
      repo.create(mac, { devComments: 'quotes "devLastConnection":"x" inside' }, new Date(now)),
      'created',
    );
    assert.equal(repo.create(neighbour, {}, new Date(now)), 'created');
    // An open session: its hours grow, and the entry must still follow them.
    db.prepare(
      "INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection, ses_StillConnected) VALUES (?, '10.0.0.1', 'Connected', '2024-06-15 10:00:00', 1)",
    ).run(mac);
  });
  after(() => {
    other.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The cached text for every period, each compared with the uncached answer; the texts. */
  async function sameAsUncached(device: string): Promise<string[]> {
    const texts: string[] = [];
    for (const period of ['all', '1 day', '7 days', '1 month', '1 year'] as const) {
      const text = await cache.get(device, period, new Date(now));
      assert.ok(text !== undefined);
      const fresh = await counting.getTimed(device, period, new Date(now));
      computed--;
      assert.equal(text, JSON.stringify(fresh?.view), `${device} ${period}`);
      texts.push(text);
    }
    return texts;
  }

  test('the entry takes the new time in place, byte for byte the uncached answer', async () => {
    await sameAsUncached(mac);
    await sameAsUncached(neighbour);
    const misses = computed;
    await sameAsUncached(mac);
    assert.equal(computed, misses, 'every period is a hit');
    // What a scan cycle writes for a device seen again (presenceSql.updatePresence).
    other
      .prepare(
        "UPDATE Devices SET devPresentLastScan = devPresentLastScan, devLastIP = devLastIP, devLastConnection = '2024-06-15 11:59:00' WHERE devMac = ?",
      )
      .run(mac);
    const texts = await sameAsUncached(mac);
    assert.ok(texts[0]?.includes('"devLastConnection":"2024-06-15T11:59:00'), texts[0]);
    await sameAsUncached(neighbour);
    assert.equal(computed, misses, "no answer was read again, the neighbour's neither");
  });

  test('requests woken by the same look each take a new time in place', async () => {
    await sameAsUncached(mac);
    await sameAsUncached(neighbour);
    const misses = computed;
    other.prepare("UPDATE Devices SET devLastConnection = '2024-06-15 11:59:10' WHERE devMac = ?").run(mac);
    // Both wait for one look; the one that polls second must not lose the first's seen values.
    const [first, second] = await Promise.all([
      cache.get(mac, 'all', new Date(now)),
      cache.get(neighbour, 'all', new Date(now)),
    ]);
    assert.ok(first?.includes('"devLastConnection":"2024-06-15T11:59:10'), first);
    assert.ok(second !== undefined);
    assert.equal(computed, misses, 'the entry took the new time; nothing was read again');
    await sameAsUncached(mac);
  });

  test('a write that moves anything else as well drops the entry', async () => {
    await sameAsUncached(mac);
    const misses = computed;
    other
      .prepare(
        "UPDATE Devices SET devLastConnection = '2024-06-15 11:59:30', devLastIP = '10.0.0.9' WHERE devMac = ?",
      )
      .run(mac);
    const texts = await sameAsUncached(mac);
    assert.ok(texts[0]?.includes('"devLastIP":"10.0.0.9"'));
    assert.equal(computed, misses + 5, 'every period read again');
    other
      .prepare(
        "INSERT INTO Events (eve_MAC, eve_DateTime, eve_EventType) VALUES (?, '2024-06-15 11:00:00', 'Device Down')",
      )
      .run(mac);
    await sameAsUncached(mac);
    assert.equal(computed, misses + 10, 'an event of the device: read again');
    await sameAsUncached(neighbour);
    assert.equal(computed, misses + 10, 'the neighbour was not named: still cached');
  });

  test('a new time and then another change in the same poll: read again', async () => {
    await sameAsUncached(mac);
    const misses = computed;
    other.prepare("UPDATE Devices SET devLastConnection = '2024-06-15 11:59:40' WHERE devMac = ?").run(mac);
    other.prepare("UPDATE Devices SET devOwner = 'someone' WHERE devMac = ?").run(mac);
    other.prepare("UPDATE Devices SET devLastConnection = '2024-06-15 11:59:50' WHERE devMac = ?").run(mac);
    await sameAsUncached(mac);
    assert.equal(computed, misses + 5);
  });

  test('changes taken in by polls for other devices are applied when the device is asked for', async () => {
    await sameAsUncached(mac);
    await sameAsUncached(neighbour);
    const misses = computed;
    const seenAgain = other.prepare('UPDATE Devices SET devLastConnection = ? WHERE devMac = ?');
    // Two new times, each taken in by a GET of the neighbour: the later one is answered, in place.
    seenAgain.run('2024-06-15 11:59:41', mac);
    await sameAsUncached(neighbour);
    seenAgain.run('2024-06-15 11:59:42', mac);
    await sameAsUncached(neighbour);
    const texts = await sameAsUncached(mac);
    assert.ok(texts[0]?.includes('"devLastConnection":"2024-06-15T11:59:42'), texts[0]);
    assert.equal(computed, misses, 'nothing read again');
    // A full change, then a new time, in two polls: the full change wins, whatever came after it.
    other.prepare("UPDATE Devices SET devOwner = 'someone else' WHERE devMac = ?").run(mac);
    await sameAsUncached(neighbour);
    seenAgain.run('2024-06-15 11:59:43', mac);
    await sameAsUncached(neighbour);
    const read = await sameAsUncached(mac);
    assert.ok(read[0]?.includes('"devOwner":"someone else"'), read[0]);
    assert.equal(computed, misses + 5, 'read again');
  });

  test('a change of a device whose entries were dropped for room is not applied to its new ones', async () => {
    const text = await cache.get(mac, 'all', new Date(now));
    assert.ok(text !== undefined);
    // Room for one device's entry: keeping the neighbour's drops this device's.
    const small = new DeviceJsonCache(counting, text.length + 16);
    const seenAgain = other.prepare('UPDATE Devices SET devLastConnection = ? WHERE devMac = ?');
    const answer = async (device: string): Promise<string | undefined> => {
      const got = await small.get(device, 'all', new Date(now));
      assert.equal(got, JSON.stringify((await counting.getTimed(device, 'all', new Date(now)))?.view));
      computed--;
      return got;
    };
    await answer(mac);
    seenAgain.run('2024-06-15 11:59:45', mac);
    await answer(neighbour); // takes the new time in (a mark), then drops the device's entry
    seenAgain.run('2024-06-15 11:59:46', mac);
    const misses = computed;
    await answer(mac); // read again, with the later time, and kept
    assert.equal(computed, misses + 1);
    const kept = await answer(mac); // the earlier time's mark must not come back
    assert.ok(kept?.includes('"devLastConnection":"2024-06-15T11:59:46'), kept);
    assert.equal(computed, misses + 1, 'a hit');
  });

  test('the same for a write on this connection (the scanner of this process)', async () => {
    await sameAsUncached(mac);
    await sameAsUncached(neighbour);
    const misses = computed;
    db.prepare("UPDATE Devices SET devLastConnection = '2024-06-15 11:59:55' WHERE devMac = ?").run(mac);
    const texts = await sameAsUncached(mac);
    assert.ok(texts[0]?.includes('"devLastConnection":"2024-06-15T11:59:55'), texts[0]);
    assert.equal(computed, misses, 'kept, with the new time');
    db.prepare(
      "UPDATE Devices SET devLastConnection = '2024-06-15 11:59:56', devVendor = 'v' WHERE devMac = ?",
    ).run(mac);
    await sameAsUncached(mac);
    assert.equal(computed, misses + 5, 'another column: read again');
  });
});
