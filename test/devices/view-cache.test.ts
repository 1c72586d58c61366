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
    const text = await cache.get(mac, new Date(at));
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

  test('a device that does not exist is undefined, and is not remembered', async () => {
    const absent = '02:00:00:00:0c:99';
    assert.equal(await cache.get(absent, new Date(now)), undefined);
    assert.equal(repo.create(absent, {}, new Date(now)), 'created');
    assert.ok((await cache.get(absent, new Date(now))) !== undefined);
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
    const oneDevice = ((await cache.get(mac, new Date(now))) ?? '').length;
    const small = new DeviceJsonCache(counting, Math.floor(oneDevice * 1.5));
    const at = new Date(now);
    await small.get(mac, at);
    await small.get(mac, at);
    assert.equal(computed, 1, 'the second read is a hit');
    await small.get(other, at); // would pass the bound: the entry cached first is dropped
    await small.get(other, at);
    assert.equal(computed, 2);
    await small.get(mac, at);
    assert.equal(computed, 3, 'the first device was dropped');
  });
});
