/**
 * The list queries at repository level, on a real database file: the SQL status predicate agrees
 * with the JavaScript rule, the history lists select exactly the rows the counts count, and every
 * list statement walks an index in its own order (no sort, no full scan of the history tables).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { deviceListStatements, deviceSql } from '../../src/store/sqlite/device-sql.js';
import { deviceStatus, deviceStatuses } from '../../src/devices/status.js';
import { deviceStatusSql } from '../../src/store/sqlite/status-sql.js';
import { history, periodDays, seedHistory, type PeriodName } from './history.js';

describe('device lists in the repository', () => {
  let dir: string;
  let db: Database;
  let repo: SqliteDevices;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'netkeep-lists-'));
    db = openDatabase(join(dir, 'netkeep.db'));
    repo = new SqliteDevices(db);
  });
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the SQL status predicate selects exactly the rows the JS rule gives that status', () => {
    const combos: [number, number][] = [
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
    ];
    const macs = combos.map((_, i) => `02:51:00:00:00:0${i}`);
    combos.forEach(([present, down], i) => {
      repo.create(macs[i] ?? '', { devPresentLastScan: present, devAlertDown: down }, new Date());
    });
    // Every status is reached by some combination, so the check below covers all three.
    assert.deepEqual(new Set(combos.map(([p, d]) => deviceStatus(p, d))), new Set(deviceStatuses));
    for (const status of deviceStatuses) {
      const bySql = db
        .prepare(`SELECT devMac FROM Devices WHERE ${deviceStatusSql(status)} ORDER BY devMac`)
        .pluck()
        .all() as string[];
      const byJs = macs.filter((_, i) => deviceStatus(...(combos[i] ?? [0, 0])) === status);
      assert.deepEqual(bySql, byJs, status);
    }
    // NULL counts as unset in both (imported data may hold it; the CHECK allows it).
    const scratch = openDatabase(':memory:');
    scratch.exec('CREATE TABLE t (p INTEGER, a INTEGER)');
    const values = [0, 1, null];
    for (const p of values) for (const a of values) scratch.prepare('INSERT INTO t VALUES (?, ?)').run(p, a);
    for (const status of deviceStatuses) {
      const rows = scratch
        .prepare(
          `SELECT p, a FROM t WHERE ${deviceStatusSql(status, { presentLastScan: 'p', alertDown: 'a' })}`,
        )
        .all() as { p: number | null; a: number | null }[];
      const expected = values
        .flatMap((p) => values.map((a) => ({ p, a })))
        .filter((r) => deviceStatus(r.p, r.a) === status);
      assert.deepEqual(rows, expected, `${status} with NULLs`);
    }
    scratch.close();
  });

  test('listSessions total equals stats().devSessions, and listEvents selects the period, for every period', () => {
    const now = Date.UTC(2024, 5, 15, 12, 0, 0);
    const mac = '02:51:00:00:01:01';
    repo.create(mac, {}, new Date(now));
    const seed = history(now);
    seedHistory(db, mac, seed);
    seedHistory(db, '02:51:00:00:01:02', seed);
    for (const period of Object.keys(periodDays) as PeriodName[]) {
      const days = periodDays[period];
      const start = days === null ? -Infinity : now - days * 86_400_000;
      const page = { offset: 0, limit: 1000 };
      const sessions = repo.listSessions(mac, period, new Date(now), page);
      const events = repo.listEvents(mac, period, new Date(now), page);
      assert.ok(sessions && events);
      assert.equal(sessions.total, repo.stats(mac, period, new Date(now)).devSessions, period);
      assert.equal(sessions.items.length, sessions.total);
      assert.equal(events.total, seed.events.filter((e) => e.at >= start).length, period);
      assert.equal(events.items.length, events.total);
    }
    // Stray history of a MAC with no device is not listed: the device does not exist.
    assert.equal(
      repo.listEvents('02:51:00:00:01:02', 'all', new Date(now), { offset: 0, limit: 1 }),
      undefined,
    );
    assert.equal(
      repo.listEvents('02:51:00:00:01:03', 'all', new Date(now), { offset: 0, limit: 1 }),
      undefined,
    );
    assert.equal(
      repo.listSessions('02:51:00:00:01:03', 'all', new Date(now), { offset: 0, limit: 1 }),
      undefined,
    );
  });

  test('history lists are index range walks in index order; the device list walks the primary key', () => {
    const plan = (sql: string, params: Record<string, unknown> = {}): string =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[])
        .map((r) => r.detail)
        .join(' | ');
    const history = { mac: '', start: '', limit: 1, offset: 0 };
    const expected: [string, string, RegExp][] = [
      [
        'eventsPage',
        deviceSql.eventsPage,
        /^SEARCH Events USING INDEX Events_mac_time \(eve_MAC=\? AND eve_DateTime>\?\)$/,
      ],
      ['eventsTotal', deviceSql.eventsTotal, /^SEARCH Events USING COVERING INDEX Events_mac_time /],
      [
        'sessionsPage',
        deviceSql.sessionsPage,
        /^SEARCH Sessions USING INDEX Sessions_mac_connection \(ses_MAC=\?\)$/,
      ],
      ['sessionsTotal', deviceSql.sessionsTotal, /^SEARCH Sessions USING COVERING INDEX Sessions_mac_stats /],
    ];
    for (const [name, sql, pattern] of expected) {
      const params = Object.fromEntries(Object.entries(history).filter(([key]) => sql.includes(`@${key}`)));
      assert.match(plan(sql, params), pattern, name);
    }
    for (const status of [undefined, ...deviceStatuses]) {
      const sql = deviceListStatements({ status });
      const pagePlan = plan(sql.page, { limit: 1, offset: 0 });
      assert.match(
        pagePlan,
        /^SCAN Devices USING INDEX sqlite_autoindex_Devices_1( \| CORRELATED SCALAR SUBQUERY \d \| SEARCH ScanState USING INDEX sqlite_autoindex_ScanState_1 \(mac=\?\))*$/,
        String(status),
      );
      assert.doesNotMatch(pagePlan, /TEMP B-TREE/);
    }
  });
});
