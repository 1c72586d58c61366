import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { countSql, deviceSql, updateOneSql } from '../../src/store/sqlite/device-sql.js';
import { editableFields } from '../../src/devices/catalogue.js';
import { deviceStatus } from '../../src/devices/status.js';
import { expectedStats, history, periodDays, seedHistory, type PeriodName } from './history.js';

describe('SqliteDevices on a real database file', () => {
  let dir: string;
  let db: Database;
  let repo: SqliteDevices;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'netkeep-repo-'));
    db = openDatabase(join(dir, 'netkeep.db'));
    repo = new SqliteDevices(db);
  });
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('devStatus: each combination of devPresentLastScan x devAlertDown', () => {
    assert.equal(deviceStatus(1, 0), 'On-line');
    assert.equal(deviceStatus(1, 1), 'On-line');
    assert.equal(deviceStatus(0, 1), 'Down');
    assert.equal(deviceStatus(0, 0), 'Off-line');
    assert.equal(deviceStatus(true, false), 'On-line');
    assert.equal(deviceStatus(false, true), 'Down');
  });

  test('stats at a fixed now match the rules exactly, for every period', () => {
    const now = Date.UTC(2024, 5, 15, 12, 0, 0);
    const seed = history(now);
    const mac = '02:00:00:00:00:01';
    assert.equal(repo.create(mac, {}, new Date(now)), 'created');
    seedHistory(db, mac, seed);
    // Another device's history must not leak into this one's counts.
    seedHistory(db, '02:00:00:00:00:02', seed);
    for (const period of Object.keys(periodDays) as PeriodName[]) {
      const expected = expectedStats(seed, period, now);
      const actual = repo.stats(mac, period, new Date(now));
      assert.deepEqual(
        actual,
        {
          devSessions: expected.devSessions,
          devEvents: expected.devEvents,
          devDownAlerts: expected.devDownAlerts,
          devPresenceHours: Math.round(expected.hours * 100) / 100,
        },
        period,
      );
    }
    // Spot-check the independent computation itself against hand-worked numbers for `1 day`:
    // 4 h of the session straddling the start + 2 h of the open one; 3 sessions; 2 events.
    assert.deepEqual(repo.stats(mac, '1 day', new Date(now)), {
      devSessions: 3,
      devEvents: 2,
      devDownAlerts: 1,
      devPresenceHours: 6,
    });
  });

  test('a device with no history has zero counts', () => {
    assert.deepEqual(repo.stats('02:00:00:00:00:99', 'all', new Date()), {
      devSessions: 0,
      devEvents: 0,
      devDownAlerts: 0,
      devPresenceHours: 0,
    });
  });

  test('update and create refuse a column outside the editable catalogue', () => {
    assert.equal(repo.create('02:00:00:00:00:03', {}, new Date()), 'created');
    assert.throws(() => repo.update('02:00:00:00:00:03', { devGUID: 'x' }), RangeError);
    assert.throws(() => repo.update('02:00:00:00:00:03', { devMac: 'x' }), RangeError);
    assert.throws(() => updateOneSql('devName = 1; --'), RangeError);
    assert.throws(() => repo.create('02:00:00:00:00:04', { 'devName = 1; --': 'x' }, new Date()), RangeError);
  });

  test('every per-device statement is an index lookup (EXPLAIN QUERY PLAN never scans)', () => {
    const updateOne = Object.fromEntries(
      editableFields.map((f) => [`updateOne ${f.name}`, updateOneSql(f.name)]),
    );
    for (const [name, sql] of Object.entries({ ...deviceSql, ...countSql, ...updateOne })) {
      if (name === 'insert') continue;
      const named = [...sql.matchAll(/@(\w+)/g)].map((m) => m[1] ?? '');
      const positional = (sql.match(/\?/g) ?? []).length;
      const explain = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
      const plan = (
        named.length > 0
          ? explain.all(Object.fromEntries(named.map((n) => [n, n.startsWith('set_') ? 0 : ''])))
          : explain.all(...Array<string>(positional).fill(''))
      ) as { detail: string }[];
      const details = plan.map((row) => row.detail);
      assert.ok(details.length > 0, `${name} has a plan`);
      // A recursive walk (parentCycle's `up`) reads its own queue of rows, and a subquery in FROM
      // (`kept`'s one-row aggregate `o`) its own rows; each step into a table must still be an
      // index lookup.
      const walks = [...sql.matchAll(/WITH RECURSIVE (\w+)\(|\) AS (\w+)\s/g)].map((m) => m[1] ?? m[2] ?? '');
      for (const detail of details.filter((d) => !walks.some((walk) => d === `SCAN ${walk}`)))
        assert.doesNotMatch(detail, /^SCAN (?!CONSTANT|\(subquery)/, `${name}: ${details.join(' | ')}`);
    }
  });
});
