/**
 * The API the console needs, over real HTTP against the real server: search (`q`), sort and the
 * counter groups on GET /devices, GET /devices/totals and /totals/named, and the event log across
 * devices (GET /history/events), on both stores (test/helpers/stores.ts). Plus their query plans on
 * a real SQLite database file.
 */
import { eventTypes } from '../../src/devices/history.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { eventLogSql } from '../../src/store/sqlite/event-log.js';
import { containsPattern } from '../../src/store/sqlite/list-sql.js';
import { deviceListStatements } from '../../src/store/sqlite/device-sql.js';
import { deviceGroups } from '../../src/devices/status.js';
import { deviceGroupSql, deviceTotalsSql } from '../../src/store/sqlite/status-sql.js';
import type { InProcessServer } from '../helpers/inject.js';
import type { HttpClient } from '../helpers/server.js';
import { openTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';

type Json = Record<string, unknown>;

/** [mac, fields]: every counter group and both wildcard characters appear. */
const devices: [string, Json][] = [
  [
    '02:aa:00:00:00:01',
    {
      devName: 'Alice phone',
      devOwner: 'Alice',
      devVendor: 'Apple',
      devLastIP: '10.0.0.11',
      devPresentLastScan: 1,
      devIsNew: 0,
    },
  ],
  [
    '02:aa:00:00:00:02',
    {
      devName: 'bob laptop',
      devOwner: 'Bob',
      devVendor: 'Dell',
      devLastIP: '10.0.0.12',
      devFavorite: 1,
      devIsNew: 0,
    },
  ],
  [
    '02:aa:00:00:00:03',
    {
      devName: 'NAS 100%',
      devOwner: '',
      devVendor: 'Synology',
      devLastIP: '10.0.0.13',
      devAlertDown: 1,
      devIsNew: 0,
    },
  ],
  [
    '02:aa:00:00:00:04',
    {
      devName: 'cam_1',
      devOwner: 'Carol',
      devVendor: 'Hikvision',
      devLastIP: '10.0.0.14',
      devAlertDown: 1,
      devIsArchived: 1,
    },
  ],
  [
    '02:aa:00:00:00:05',
    {
      devName: 'camX1',
      devOwner: 'Carol',
      devVendor: 'Hikvision',
      devLastIP: '10.0.0.15',
      devPresentLastScan: 1,
    },
  ],
];

async function getJson(server: HttpClient, path: string): Promise<Json> {
  const res = await server.request('GET', path);
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  return res.json;
}

async function macs(server: HttpClient, query: string): Promise<string[]> {
  const body = await getJson(server, `/devices?${query}`);
  return (body.devices as Json[]).map((d) => String(d.devMac));
}

onEachStore('GET /devices search, sort and groups; totals', (_store, start) => {
  let server: InProcessServer;
  before(async () => {
    server = await start();
    for (const [mac, fields] of devices) {
      const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
      assert.equal(res.status, 200, res.text);
    }
  });
  after(async () => {
    await server.stop();
  });

  test('q searches name, MAC, IP, vendor and owner, ignoring case; total counts the matches', async () => {
    assert.deepEqual(await macs(server, 'q=alice'), ['02:aa:00:00:00:01']);
    assert.deepEqual(await macs(server, 'q=DELL'), ['02:aa:00:00:00:02']);
    assert.deepEqual(await macs(server, 'q=10.0.0.13'), ['02:aa:00:00:00:03']);
    assert.deepEqual(await macs(server, 'q=carol'), ['02:aa:00:00:00:04', '02:aa:00:00:00:05']);
    assert.deepEqual(await macs(server, 'q=00:00:05'), ['02:aa:00:00:00:05']);
    assert.deepEqual(await macs(server, 'q=00-00-05'), ['02:aa:00:00:00:05'], 'a MAC typed with dashes');
    assert.deepEqual(await macs(server, `q=${encodeURIComponent('  hikvision ')}&limit=1`), [
      '02:aa:00:00:00:04',
    ]);
    assert.equal((await getJson(server, 'q=hikvision&limit=1'.replace(/^/, '/devices?'))).total, 2);
    assert.deepEqual(await macs(server, 'q=nothing-like-this'), []);
    assert.equal((await getJson(server, '/devices?q=')).total, devices.length, 'empty q: no filter');
  });

  test('LIKE wildcards in q are literal characters', async () => {
    assert.deepEqual(await macs(server, `q=${encodeURIComponent('100%')}`), ['02:aa:00:00:00:03']);
    assert.deepEqual(await macs(server, `q=${encodeURIComponent('%')}`), ['02:aa:00:00:00:03']);
    assert.deepEqual(await macs(server, 'q=cam_'), ['02:aa:00:00:00:04'], '_ is not "any character"');
    assert.deepEqual(await macs(server, `q=${encodeURIComponent('\\')}`), []);
    assert.equal(containsPattern('a%b_c\\'), '%a\\%b\\_c\\\\%');
  });

  test('sort by an allowed column and order; ties broken by MAC', async () => {
    assert.deepEqual(await macs(server, 'sort=devName&status=all'), [
      '02:aa:00:00:00:01',
      '02:aa:00:00:00:02',
      '02:aa:00:00:00:04',
      '02:aa:00:00:00:05',
      '02:aa:00:00:00:03',
    ]);
    assert.deepEqual(await macs(server, 'sort=devOwner&order=desc&q=carol'), [
      '02:aa:00:00:00:05',
      '02:aa:00:00:00:04',
    ]);
    const byStatus = await getJson(server, '/devices?sort=devStatus');
    const statuses = (byStatus.devices as Json[]).map((d) => String(d.devStatus));
    assert.deepEqual(statuses, [...statuses].sort());
  });

  test('status accepts the devStatus values and the counter groups', async () => {
    const expected: Record<string, string[]> = {
      'On-line': ['02:aa:00:00:00:01', '02:aa:00:00:00:05'],
      Down: ['02:aa:00:00:00:03', '02:aa:00:00:00:04'],
      my: ['02:aa:00:00:00:01', '02:aa:00:00:00:02', '02:aa:00:00:00:03', '02:aa:00:00:00:05'],
      connected: ['02:aa:00:00:00:01', '02:aa:00:00:00:05'],
      favorites: ['02:aa:00:00:00:02'],
      new: ['02:aa:00:00:00:05'],
      down: ['02:aa:00:00:00:03'],
      archived: ['02:aa:00:00:00:04'],
      all: devices.map(([mac]) => mac),
    };
    for (const [status, list] of Object.entries(expected)) {
      assert.deepEqual(await macs(server, `status=${encodeURIComponent(status)}`), list, status);
    }
  });

  test('totals: the bare array and the named object agree with the lists of each group', async () => {
    const bare = await server.request('GET', '/devices/totals');
    assert.equal(bare.status, 200);
    assert.deepEqual(bare.body, [4, 2, 1, 1, 1, 1]);
    const named = await getJson(server, '/devices/totals/named');
    assert.deepEqual(named, {
      success: true,
      totals: { devices: 4, connected: 2, favorites: 1, new: 1, down: 1, archived: 1 },
    });
    for (const [i, group] of deviceGroups.entries()) {
      const list = await getJson(server, `/devices?status=${group}`);
      assert.equal(list.total, (bare.json as unknown as number[])[i], group);
    }
    assert.equal((await server.request('GET', '/devices/totals', { token: null })).status, 403);
  });

  test('bad q, sort, order and status are 400s naming the parameter', async () => {
    const cases: [string, RegExp][] = [
      [`q=${'x'.repeat(101)}`, /^q must be at most 100/],
      ['sort=devGUID', /^sort must be one of: devName, /],
      [`sort=${encodeURIComponent('devName; DROP TABLE Devices')}`, /^sort must be one of/],
      ['sort=devname', /^sort must be one of/],
      ['order=up', /^order must be one of: asc, desc/],
      ['status=online', /^status must be one of: On-line, Off-line, Down, my, connected/],
      ['status=Archived', /^status must be one of/],
      ['q=a&q=b', /q/],
    ];
    for (const [query, pattern] of cases) {
      const res = await server.request('GET', `/devices?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.match(String(res.json.message), pattern, query);
    }
  });
});

onEachStore('GET /history/events', (_store, start) => {
  let server: InProcessServer;
  const rows: [string, string, string][] = [
    ['02:bb:00:00:00:01', '2026-01-01 10:00:00', 'New Device'],
    ['02:bb:00:00:00:01', '2026-01-02 10:00:00', 'Connected'],
    ['02:bb:00:00:00:02', '2026-01-03 10:00:00', 'Device Down'],
    ['02:bb:00:00:00:02', '2026-01-04 10:00:00', 'Down Reconnected'],
    ['02:bb:00:00:00:09', '2026-01-05 10:00:00', 'Disconnected'],
    ['02:bb:00:00:00:01', '2026-01-05 10:00:00', 'IP Changed'],
  ];
  before(async () => {
    server = await start();
    for (const mac of ['02:bb:00:00:00:01', '02:bb:00:00:00:02']) {
      const res = await server.request('POST', `/device/${mac}`, {
        body: { createNew: true, devName: `dev ${mac.slice(-1)}` },
      });
      assert.equal(res.status, 200);
    }
    const db = await openTables(server);
    try {
      for (const [mac, time, type] of rows)
        await db.run(
          'INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType") VALUES (?, ?, ?, ?)',
          [mac, '10.0.0.1', time, type],
        );
      await db.until(
        async () => (await server.request('GET', '/history/events')).json.total === rows.length,
        'the events written',
      );
    } finally {
      await db.close();
    }
  });
  after(async () => {
    await server.stop();
  });

  test('every event, newest first (insertion order within one second), with the device name', async () => {
    const body = await getJson(server, '/history/events');
    assert.equal(body.total, rows.length);
    assert.equal(body.offset, 0);
    assert.equal(body.limit, 100);
    const events = body.events as Json[];
    assert.deepEqual(
      events.map((e) => e.eve_EventType),
      ['IP Changed', 'Disconnected', 'Down Reconnected', 'Device Down', 'Connected', 'New Device'],
    );
    const [first, second] = events as [Json, Json];
    assert.equal(first.eve_DateTime, '2026-01-05T10:00:00Z');
    assert.equal(first.devName, 'dev 1');
    assert.equal(second.devName, null, 'a deleted device has no name');
  });

  test('type and time filters, and paging', async () => {
    const typed = await getJson(
      server,
      `/history/events?type=${encodeURIComponent('Device Down,New Device')}`,
    );
    assert.equal(typed.total, 2);
    assert.deepEqual(
      (typed.events as Json[]).map((e) => e.eve_EventType),
      ['Device Down', 'New Device'],
    );
    const ranged = await getJson(
      server,
      '/history/events?since=2026-01-02T10:00:00Z&until=2026-01-04T10:00:00Z',
    );
    assert.equal(ranged.total, 3, 'both ends included');
    const page = await getJson(server, '/history/events?limit=2&offset=2');
    assert.equal(page.total, rows.length);
    assert.deepEqual(
      (page.events as Json[]).map((e) => e.eve_EventType),
      ['Down Reconnected', 'Device Down'],
    );
    const all = await getJson(
      server,
      `/history/events?type=${encodeURIComponent(rows.map((r) => r[2]).join(','))}`,
    );
    assert.equal(all.total, rows.length);
  });

  test('bad filters are 400s naming the parameter', async () => {
    const cases: [string, RegExp][] = [
      ['type=Bogus', /^type must be a comma-separated list of: New Device/],
      ['type=Connected,connected', /^type must be/],
      ['since=yesterday', /^since must be an ISO 8601/],
      ['until=2026-13-01', /^until must be an ISO 8601/],
      ['limit=0', /^limit must be/],
      ['mac=02:bb:00:00:00:01', /unknown field 'mac'/],
    ];
    for (const [query, pattern] of cases) {
      const res = await server.request('GET', `/history/events?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.match(String(res.json.message), pattern, query);
    }
    assert.equal((await server.request('GET', '/history/events', { token: null })).status, 403);
  });

  test('the new endpoints are in the OpenAPI document', async () => {
    const doc = await getJson(server, '/openapi.json');
    const paths = doc.paths as Record<string, Json>;
    for (const path of ['/devices/totals', '/devices/totals/named', '/history/events', '/session'])
      assert.ok(path in paths, path);
    const params = ((paths['/devices']?.get as Json).parameters as Json[]).map((p) => p.name);
    for (const name of ['q', 'sort', 'order', 'status']) assert.ok(params.includes(name), name);
  });
});

describe('query plans of the console queries', () => {
  let dir: string;
  let db: Database.Database;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'netkeep-console-plans-'));
    db = openDatabase(join(dir, 'netkeep.db'));
  });
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const plan = (sql: string, params: Record<string, unknown>) =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[])
      .map((r) => r.detail)
      .join(' | ');
  // One parameter per event type.
  const typeParams = Object.fromEntries(eventTypes.map((_, i) => [`t${i}`, 'Connected']));

  test('the event log pages along Events_time and counts from an index alone', () => {
    for (const typed of [false, true]) {
      const params = { since: '', until: '9', limit: 1, offset: 0, ...(typed ? typeParams : {}) };
      const page = plan(eventLogSql.page(typed), params);
      assert.match(
        page,
        /SEARCH Events USING (COVERING )?INDEX Events_time \(eve_DateTime>\? AND eve_DateTime<\?\)/,
      );
      assert.match(page, /SEARCH e USING INTEGER PRIMARY KEY/);
      const countParams = Object.fromEntries(
        Object.entries(params).filter(([key]) => key !== 'limit' && key !== 'offset'),
      );
      const total = plan(eventLogSql.total(typed), countParams);
      assert.match(total, typed ? /COVERING INDEX Events_type_time/ : /COVERING INDEX Events_time/);
    }
  });

  test('group predicates and totals run as one pass over Devices; an unsorted list walks the key', () => {
    assert.match(plan(deviceTotalsSql, {}), /^SCAN Devices/);
    for (const group of deviceGroups) {
      assert.doesNotMatch(deviceGroupSql(group), /@|\?/, 'constant text');
      const sql = deviceListStatements({ status: group });
      assert.match(
        plan(sql.page, { limit: 1, offset: 0 }),
        /^SCAN Devices USING INDEX sqlite_autoindex_Devices_1( \| CORRELATED SCALAR SUBQUERY \d \| SEARCH ScanState USING INDEX sqlite_autoindex_ScanState_1 \(mac=\?\))*$/,
      );
    }
  });
});
