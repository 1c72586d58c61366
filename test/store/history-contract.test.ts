/**
 * A device's history lists and the event log across devices, run against both stores: the same Events and Sessions rows (ties in
 * time, a session without a connection time, open and closed ones, rows outside each period) in
 * SQLite and PostgreSQL; every period, every page and the totals compared, and a device that does
 * not exist.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { periods, type Period } from '../../src/time.js';
import { PostgresEventLog } from '../../src/store/postgres/event-log.js';
import { PostgresHistoryStore } from '../../src/store/postgres/history.js';
import { SqliteEventLog } from '../../src/store/sqlite/event-log.js';
import type { EventLogFilter } from '../../src/store/event-log.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { SqliteDeviceStore } from '../../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'history contract on PostgreSQL');
const mac = 'aa:00:00:00:00:01';
const now = new Date(Date.UTC(2026, 5, 15, 12));

const rows = `
  INSERT INTO "Devices" ("devMac") VALUES ('${mac}'), ('aa:00:00:00:00:02');
  INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType", "eve_AdditionalInfo") VALUES
    ('${mac}', '10.0.0.1', '2026-06-15 11:00:00', 'Connected', ''),
    ('${mac}', '10.0.0.1', '2026-06-15 11:00:00', 'IP Changed', 'tie in time'),
    ('${mac}', '10.0.0.1', '2026-06-15 11:00:00', 'IP Changed', 'tie in time and type'),
    ('${mac}', '10.0.0.2', '2026-06-14 10:00:00', 'Device Down', ''),
    ('${mac}', '10.0.0.2', '2026-06-01 10:00:00', 'New Device', ''),
    ('${mac}', '10.0.0.2', '2025-01-01 10:00:00', 'Connected', 'last year'),
    ('aa:00:00:00:00:02', '10.0.0.9', '2026-06-15 11:00:00', 'Connected', 'another device');
  INSERT INTO "Sessions" ("ses_MAC", "ses_IP", "ses_EventTypeConnection", "ses_DateTimeConnection",
      "ses_EventTypeDisconnection", "ses_DateTimeDisconnection", "ses_StillConnected") VALUES
    ('${mac}', '10.0.0.1', 'Connected', '2026-06-15 11:00:00', '', NULL, 1),
    ('${mac}', '10.0.0.1', 'Connected', NULL, 'Disconnected', '2026-06-15 10:00:00', 0),
    ('${mac}', '10.0.0.2', 'Connected', '2026-06-14 09:00:00', 'Device Down', '2026-06-14 10:00:00', 0),
    ('${mac}', '10.0.0.2', 'Connected', '2026-06-14 09:00:00', 'Disconnected', '2026-06-14 09:30:00', 0),
    ('${mac}', '10.0.0.2', 'New Device', '2026-05-01 10:00:00', 'Disconnected', '2026-06-10 10:00:00', 0),
    ('${mac}', '10.0.0.2', 'Connected', '2025-01-01 10:00:00', 'Disconnected', '2025-01-01 11:00:00', 0);
`;

describe('the history lists on SQLite and PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let pool: PostgresPool;
  let dir: string;
  const dbs: Database[] = [];

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    pool = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-history-contract-'));
  });
  after(async () => {
    for (const db of dbs) db.close();
    await pool.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every period and page gives the same rows, order and total', async () => {
    const db = openDatabase(join(dir, 'netkeep.db'));
    // Kept open for the event log test below, which reads the same rows (closed in `after`).
    dbs.push(db);
    db.exec(rows);
    await pool.query(rows);
    const lite = new SqliteDeviceStore(new SqliteDevices(db));
    const pg = new PostgresHistoryStore(pool);
    let compared = 0;
    for (const period of Object.keys(periods) as Period[]) {
      for (const page of [
        { offset: 0, limit: 100 },
        { offset: 0, limit: 2 },
        { offset: 2, limit: 2 },
        { offset: 5, limit: 3 },
      ]) {
        const events = await lite.listEvents(mac, period, now, page);
        assert.deepEqual(
          await pg.listEvents(mac, period, now, page),
          events,
          `events ${period} ${page.offset}`,
        );
        const sessions = await lite.listSessions(mac, period, now, page);
        assert.deepEqual(
          await pg.listSessions(mac, period, now, page),
          sessions,
          `sessions ${period} ${page.offset}`,
        );
        compared += (events?.items.length ?? 0) + (sessions?.items.length ?? 0);
      }
    }
    assert.ok(compared > 30, 'rows were compared');
    const all = await lite.listSessions(mac, 'all', now, { offset: 0, limit: 100 });
    assert.equal(
      all?.items.at(-1)?.ses_DateTimeConnection,
      null,
      'the session without a connection time is last',
    );
    for (const missing of ['aa:00:00:00:00:99']) {
      assert.equal(await pg.listEvents(missing, 'all', now, { offset: 0, limit: 10 }), undefined);
      assert.equal(await pg.listSessions(missing, 'all', now, { offset: 0, limit: 10 }), undefined);
      assert.equal(await lite.listEvents(missing, 'all', now, { offset: 0, limit: 10 }), undefined);
    }
  });

  test('the event log: every filter and page gives the same events, names and total', async () => {
    const db = dbs[0];
    assert.ok(db !== undefined, 'the rows of the first test');
    // An event of a device that is gone: listed with no name.
    const gone = `INSERT INTO "Events" ("eve_MAC", "eve_DateTime", "eve_EventType") VALUES ('aa:00:00:00:00:77', '2026-06-15 09:00:00', 'Device Down')`;
    db.exec(gone);
    await pool.query(gone);
    const lite = new SqliteEventLog(db);
    const pg = new PostgresEventLog(pool);
    const filters: EventLogFilter[] = [
      {},
      { types: ['Device Down'] },
      { types: ['IP Changed', 'Connected', 'New Device'] },
      { since: new Date(Date.UTC(2026, 5, 14, 10)) },
      {
        since: new Date(Date.UTC(2026, 5, 1)),
        until: new Date(Date.UTC(2026, 5, 15, 10)),
        types: ['Device Down', 'New Device'],
      },
    ];
    let compared = 0;
    for (const filter of filters)
      for (const page of [
        { offset: 0, limit: 100 },
        { offset: 1, limit: 2 },
      ]) {
        const expected = await lite.list(filter, page);
        assert.deepEqual(await pg.list(filter, page), expected, JSON.stringify(filter));
        compared += expected.items.length;
      }
    assert.ok(compared > 15);
    assert.ok((await lite.list({}, { offset: 0, limit: 100 })).items.some((e) => e.devName === null));
  });
});
