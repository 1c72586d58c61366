/**
 * GET /devices, GET /device/<mac>/events and GET /device/<mac>/sessions against the real server on
 * each store (test/helpers/stores.ts), plus the ScanState clean-up of delete, events/delete and copy.
 * History and scanner memory are written straight into the tables from another connection, as the
 * scanner would (their shape is fixed by DESIGN 4; test/helpers/store-tables.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { mapFieldNames, storedFields } from '../../src/devices/catalogue.js';
import type { InProcessServer } from '../helpers/inject.js';
import { openTables, type StoreTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';
import { notAuthorizedBody, type HttpClient } from '../helpers/server.js';
import { expectedStats, history, periodDays, type PeriodName } from './history.js';

type Db = StoreTables;
type Json = Record<string, unknown>;

const hour = 3_600_000;
const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

async function create(server: HttpClient, mac: string, fields: Json = {}): Promise<void> {
  const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
  assert.equal(res.status, 200, res.text);
}

async function getOk(server: HttpClient, path: string): Promise<Json> {
  const res = await server.request('GET', path);
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  assert.equal(res.json.success, true);
  return res.json;
}

function list(body: Json, key: string): Json[] {
  const items = body[key];
  assert.ok(Array.isArray(items), `${key} is an array`);
  return items as Json[];
}

/** Asserts a 4xx error body and that the database is exactly as before. */
async function assertRejected(
  server: HttpClient,
  db: Db,
  status: number,
  path: string,
  pattern?: RegExp,
  token?: string | null,
): Promise<void> {
  const state = async () =>
    (await db.dump()) + JSON.stringify(await db.all('SELECT * FROM "ScanState" ORDER BY "mac"'));
  const before = await state();
  const res = await server.request('GET', path, { token });
  assert.equal(res.status, status, `${path}: ${res.text}`);
  assert.equal(res.json.success, false);
  if (pattern) assert.match(String(res.json.message), pattern, path);
  assert.equal(await state(), before, `${path}: the database is unchanged`);
}

/** Hostile or malformed paging values: every one is a 400. */
const badPaging = [
  'limit=0',
  'limit=1001',
  'limit=-1',
  'limit=abc',
  'limit=',
  'limit=1e3',
  'limit=0x10',
  'limit=%2010',
  'limit=10.5',
  `limit=${encodeURIComponent('1;DROP TABLE Devices')}`,
  'offset=-1',
  'offset=abc',
  'offset=1.5',
  'offset=',
  'offset=99999999999',
  `offset=${encodeURIComponent('0 OR 1=1')}`,
];

onEachStore('GET /devices', (_store, start) => {
  let server: InProcessServer;
  let db: Db;
  // 13 devices over the four flag combinations, created in an order that is not MAC order.
  const devices: { mac: string; present: number; down: number; status: string }[] = [];
  before(async () => {
    server = await start();
    db = await openTables(server);
    for (let i = 0; i < 13; i++) {
      const n = (i * 7) % 13; // a permutation of 0..12
      const mac = `02:de:00:00:00:${n.toString(16).padStart(2, '0')}`;
      const present = i % 2;
      const down = Math.floor(i / 2) % 2;
      const status = present === 1 ? 'On-line' : down === 1 ? 'Down' : 'Off-line';
      devices.push({ mac, present, down, status });
      await create(server, mac, { devName: `dev ${n}`, devPresentLastScan: present, devAlertDown: down });
    }
  });
  after(async () => {
    await db.close();
    await server.stop();
  });
  const sortedMacs = (status?: string): string[] =>
    devices
      .filter((d) => status === undefined || d.status === status)
      .map((d) => d.mac)
      .sort();

  test('lists every device in MAC order with stored fields, devStatus and the presence flags, no counts', async () => {
    const res = await server.request('GET', '/devices');
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    const body = res.json;
    // No limit: every device, and limit null (as NetAlertX answers).
    assert.deepEqual(
      { total: body.total, offset: body.offset, limit: body.limit },
      { total: 13, offset: 0, limit: null },
    );
    assert.deepEqual(Object.keys(body), ['success', 'devices', 'total', 'offset', 'limit']);
    const items = list(body, 'devices');
    assert.deepEqual(
      items.map((d) => d.devMac),
      sortedMacs(),
    );
    for (const item of items) {
      const expected = devices.find((d) => d.mac === item.devMac);
      assert.ok(expected);
      assert.equal(item.devStatus, expected.status, String(item.devMac));
      assert.deepEqual(
        Object.keys(item).sort(),
        [
          ...storedFields.map((f) => f.name),
          'devStatus',
          'devSleeping',
          'devFlapping',
          'devRandomMac',
        ].sort(),
      );
      // The stored fields are exactly what GET /device/<mac> returns.
      const full = (await server.request('GET', `/device/${String(item.devMac)}`)).json;
      for (const f of storedFields) assert.deepEqual(item[f.name], full[f.name], f.name);
      assert.equal(item.devStatus, full.devStatus);
      assert.equal(item.devRandomMac, full.devRandomMac);
    }
  });

  test('status filters each value in SQL, with total counted under the same filter', async () => {
    for (const status of ['On-line', 'Off-line', 'Down']) {
      const body = await getOk(server, `/devices?status=${encodeURIComponent(status)}`);
      const expected = sortedMacs(status);
      assert.ok(expected.length > 0, status);
      assert.equal(body.total, expected.length, status);
      assert.deepEqual(
        list(body, 'devices').map((d) => d.devMac),
        expected,
        status,
      );
      assert.ok(list(body, 'devices').every((d) => d.devStatus === status));
      // Paged under the filter: two at a time, the pages add up to the filtered list.
      const pages: unknown[] = [];
      for (let offset = 0; offset < expected.length; offset += 2) {
        const page = await getOk(
          server,
          `/devices?status=${encodeURIComponent(status)}&limit=2&offset=${offset}`,
        );
        assert.equal(page.total, expected.length);
        pages.push(...list(page, 'devices').map((d) => d.devMac));
      }
      assert.deepEqual(pages, expected, `${status} paged`);
    }
  });

  test('sleeping= and flapping= filter on the presence flags in SQL; a bad value is a 400', async () => {
    // The scanner's memory, written as a cycle would: two devices missed (one with devCanSleep:
    // sleeping only if present), one flapping.
    const present = devices.filter((d) => d.present === 1).map((d) => d.mac);
    const absent = devices.filter((d) => d.present === 0).map((d) => d.mac);
    const [sleeper = '', awakeMissed = ''] = present;
    const [absentSleeper = '', flapper = ''] = absent;
    for (const mac of [sleeper, absentSleeper])
      assert.equal(
        (await server.request('POST', `/device/${mac}`, { body: { devCanSleep: 1 } })).status,
        200,
      );
    for (const [mac, misses, flapping] of [
      [sleeper, 2, 0],
      [awakeMissed, 1, 0],
      [absentSleeper, 3, 0],
      [flapper, 0, 1],
    ] as const)
      await db.run(
        'INSERT INTO "ScanState" ("mac", "misses", "lastAbsence", "flapping") VALUES (?, ?, NULL, ?)',
        [mac, misses, flapping],
      );
    const macs = async (query: string): Promise<unknown[]> => {
      const body = await getOk(server, `/devices?${query}`);
      const items = list(body, 'devices');
      assert.equal(body.total, items.length, query);
      return items.map((d) => d.devMac);
    };
    try {
      await db.until(
        async () => JSON.stringify(await macs('flapping=1')) === JSON.stringify([flapper]),
        'the scanner memory written',
      );
      assert.deepEqual(await macs('sleeping=1'), [sleeper]);
      assert.deepEqual(await macs('flapping=1'), [flapper]);
      assert.deepEqual(
        await macs('flapping=1&status=Off-line'),
        devices.find((d) => d.mac === flapper)?.status === 'Off-line' ? [flapper] : [],
      );
      assert.deepEqual(
        await macs('sleeping=0'),
        sortedMacs().filter((m) => m !== sleeper),
      );
      assert.deepEqual(
        await macs('sleeping=0&flapping=0'),
        sortedMacs().filter((m) => m !== sleeper && m !== flapper),
      );
      const item = list(await getOk(server, '/devices?sleeping=1'), 'devices')[0];
      assert.deepEqual([item?.devSleeping, item?.devFlapping], [1, 0]);
      // A write from outside netkeep reaches each cache on its own (PostgreSQL: the change log,
      // read within a second); the device's view is its own cache entry.
      await db.until(async () => {
        const full = (await server.request('GET', `/device/${flapper}`)).json;
        return full.devSleeping === 0 && full.devFlapping === 1;
      }, `GET /device/${flapper}: devSleeping 0, devFlapping 1`);
      await assertRejected(server, db, 400, '/devices?sleeping=yes', /sleeping/);
      await assertRejected(server, db, 400, '/devices?flapping=2', /flapping/);
    } finally {
      await db.run('DELETE FROM "ScanState"');
      await db.until(async () => (await macs('flapping=1')).length === 0, 'the scanner memory deleted');
      for (const mac of [sleeper, absentSleeper])
        await server.request('POST', `/device/${mac}`, { body: { devCanSleep: 0 } });
    }
  });

  test('site= lists the devices of one site (exactly; empty: those with none), cached per site', async () => {
    const macs = async (query: string): Promise<unknown[]> => {
      const body = await getOk(server, `/devices?${query}`);
      const items = list(body, 'devices');
      assert.equal(body.total, items.length, query);
      return items.map((d) => d.devMac);
    };
    const all = sortedMacs();
    const office = [all[1] ?? '', all[4] ?? ''];
    const parents = all[7] ?? '';
    const setSite = async (mac: string, site: string) => {
      const res = await server.request('POST', `/device/${mac}`, { body: { devSite: site } });
      assert.equal(res.status, 200, res.text);
    };
    try {
      for (const mac of office) await setSite(mac, 'Main office');
      await setSite(parents, 'Parents');
      assert.deepEqual(await macs('site=Main%20office'), office);
      assert.deepEqual(await macs('site=Parents&sort=devName'), [parents]);
      assert.deepEqual(await macs('site=main%20office'), [], 'a site is matched exactly');
      // A NUL (U+0000) matches no site: no 500 where PostgreSQL refuses it as a parameter.
      assert.deepEqual(await macs('site=Main%20office%00'), []);
      assert.deepEqual(await macs('site=Main%20office%00&q=a%00b'), []);
      assert.deepEqual(
        await macs('site='),
        all.filter((m) => !office.includes(m) && m !== parents),
      );
      const onlineOffice = devices.filter((d) => office.includes(d.mac) && d.status === 'On-line');
      assert.deepEqual(
        await macs('site=Main%20office&status=On-line'),
        onlineOffice.map((d) => d.mac).sort(),
      );
      // A device that moves to another site moves between the (cached) lists.
      await setSite(parents, 'Main office');
      assert.deepEqual(await macs('site=Main%20office'), [...office, parents].sort());
      assert.deepEqual(await macs('site=Parents'), []);
      await assertRejected(server, db, 400, `/devices?site=${'x'.repeat(65)}`, /site/);
    } finally {
      for (const mac of [...office, parents]) await setSite(mac, '');
    }
  });

  test('offset/limit page through a stable order; total is the whole list; past the end is empty', async () => {
    const pages: unknown[] = [];
    for (const offset of [0, 5, 10]) {
      const body = await getOk(server, `/devices?offset=${offset}&limit=5`);
      assert.deepEqual([body.total, body.offset, body.limit], [13, offset, 5]);
      pages.push(...list(body, 'devices').map((d) => d.devMac));
    }
    assert.deepEqual(pages, sortedMacs());
    const past = await getOk(server, '/devices?offset=13');
    assert.deepEqual([list(past, 'devices').length, past.total, past.offset], [0, 13, 13]);
    const rest = await getOk(server, '/devices?offset=5');
    assert.deepEqual([list(rest, 'devices').map((d) => d.devMac), rest.limit], [sortedMacs().slice(5), null]);
    const max = await getOk(server, '/devices?limit=1000&offset=0');
    assert.deepEqual([list(max, 'devices').length, max.limit], [13, 1000]);
    const one = await getOk(server, '/devices?limit=1&offset=12');
    assert.deepEqual(
      list(one, 'devices').map((d) => d.devMac),
      sortedMacs().slice(12),
    );
  });

  test('a device whose flags change moves between the filtered lists', async () => {
    const mac = sortedMacs('Off-line')[0] ?? '';
    const res = await server.request('POST', `/device/${mac}/update-column`, {
      body: { columnName: 'devAlertDown', columnValue: 1 },
    });
    assert.equal(res.status, 200);
    assert.ok(list(await getOk(server, '/devices?status=Down'), 'devices').some((d) => d.devMac === mac));
    assert.ok(
      !list(await getOk(server, '/devices?status=Off-line'), 'devices').some((d) => d.devMac === mac),
    );
    await server.request('POST', `/device/${mac}/update-column`, {
      body: { columnName: 'devAlertDown', columnValue: 0 },
    });
  });

  test('GET /devices/map: every device with only the fields the map draws, following every change', async () => {
    const mapItems = async (): Promise<Json[]> => {
      const body = await getOk(server, '/devices/map');
      assert.deepEqual(Object.keys(body), ['success', 'devices', 'total']);
      const items = list(body, 'devices');
      assert.equal(body.total, items.length);
      return items;
    };
    /** What the map must answer: the same fields of GET /devices' items, in MAC order. */
    const expected = async (): Promise<Json[]> =>
      list(await getOk(server, '/devices?status=all'), 'devices').map((d) =>
        Object.fromEntries(mapFieldNames.map((name) => [name, d[name]])),
      );
    const first = await mapItems();
    assert.deepEqual(first, await expected());
    assert.deepEqual(
      first.map((d) => d.devMac),
      sortedMacs(),
    );
    for (const item of first) assert.deepEqual(Object.keys(item), [...mapFieldNames]);
    const [child, parent] = sortedMacs();
    assert.ok(child !== undefined && parent !== undefined);
    const unchanged = JSON.stringify(first);
    try {
      // Writes through the API: the map's kept texts of that device are dropped.
      const res = await server.request('POST', `/device/${child}`, {
        body: {
          devName: 'Renamed',
          devParentMAC: parent,
          devParentPort: 3,
          devSite: 'Lab',
          devType: 'Switch',
        },
      });
      assert.equal(res.status, 200, res.text);
      const changed = (await mapItems()).find((d) => d.devMac === child);
      assert.deepEqual(changed, {
        devMac: child,
        devName: 'Renamed',
        devStatus: first.find((d) => d.devMac === child)?.devStatus,
        devParentMAC: parent,
        devParentPort: 3,
        devSite: 'Lab',
        devType: 'Switch',
      });
      // A write by another process (the kept texts cannot know which device): read again too.
      await db.run('UPDATE "Devices" SET "devName" = ?, "devPresentLastScan" = 1 WHERE "devMac" = ?', [
        'Outside',
        parent,
      ]);
      await db.until(async () => {
        const outside = (await mapItems()).find((d) => d.devMac === parent);
        return outside?.devName === 'Outside' && outside.devStatus === 'On-line';
      }, 'the write of another connection, on the map');
      assert.deepEqual(await mapItems(), await expected());
    } finally {
      await server.request('POST', `/device/${child}`, {
        body: { devName: 'dev 0', devParentMAC: '', devParentPort: null, devSite: '', devType: '' },
      });
      const was = devices.find((d) => d.mac === parent);
      await db.run('UPDATE "Devices" SET "devName" = ?, "devPresentLastScan" = ? WHERE "devMac" = ?', [
        `dev ${Number.parseInt(parent.slice(-2), 16)}`,
        was?.present ?? 0,
        parent,
      ]);
    }
    await db.until(
      async () => JSON.stringify(await mapItems()) === unchanged,
      'the map as it was, after the write of another connection',
    );
    await assertRejected(server, db, 400, '/devices/map?status=Down', /status/);
    for (const token of [null, 'wrong']) {
      const res = await server.request('GET', '/devices/map', { token });
      assert.equal(res.status, 403);
      assert.deepEqual(res.body, notAuthorizedBody);
    }
  });

  test('400 for a bad status (naming the allowed values), bad paging, unknown parameters; DB unchanged', async () => {
    for (const status of [
      'online',
      'on-line',
      'ONLINE',
      'Archived', // the counter groups are lowercase (my, connected, ..., archived)
      'NEW',
      '',
      "' OR 1=1 --",
      'On-line;DELETE FROM Devices',
    ])
      await assertRejected(
        server,
        db,
        400,
        `/devices?status=${encodeURIComponent(status)}`,
        /status must be one of: On-line, Off-line, Down/,
      );
    for (const query of badPaging)
      await assertRejected(server, db, 400, `/devices?${query}`, /(limit|offset)'? must be an integer/);
    await assertRejected(server, db, 400, '/devices?limit=1001', /limit must be an integer from 1 to 1000/);
    await assertRejected(server, db, 400, '/devices?stauts=Down', /stauts/);
    await assertRejected(server, db, 400, '/devices?limit=1&limit=2', /'limit' must be string/);
    await assertRejected(server, db, 400, '/devices?status=Down&status=On-line');
    assert.equal(await db.value('SELECT COUNT(*) FROM "Devices"'), 13);
  });

  test('403 without a valid token (before the query is validated); 405 for another method', async () => {
    for (const token of [null, 'wrong', ''])
      for (const path of ['/devices', '/devices?limit=5000', "/devices?status=' OR 1=1"]) {
        const res = await server.request('GET', path, { token });
        assert.equal(res.status, 403, path);
        assert.deepEqual(res.body, notAuthorizedBody);
      }
    const res = await server.request('POST', '/devices', { body: {} });
    assert.equal(res.status, 405);
    assert.equal(res.json.success, false);
  });
});

onEachStore('GET /device/<mac>/events and /sessions', (_store, start) => {
  let server: InProcessServer;
  let db: Db;
  const mac = '02:ee:00:00:00:01';
  const other = '02:ee:00:00:00:02';
  const ties = '02:ee:00:00:00:03';
  let seed: ReturnType<typeof history>;
  before(async () => {
    server = await start();
    db = await openTables(server);
    await create(server, mac);
    await create(server, other);
    await create(server, ties);
    seed = history(Date.now());
    await db.seedHistory(mac, seed);
    await db.seedHistory(other, history(Date.now() - 7 * hour));
    // Same-second events: order must still be stable across pages.
    const at = '2026-01-01 10:00:00';
    for (const type of ['Connected', 'IP Changed', 'Connected', 'Disconnected', 'Device Down', 'Connected'])
      await db.run(
        'INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType") VALUES (?, \'192.0.2.9\', ?, ?)',
        [ties, at, type],
      );
    await db.until(
      async () => (await server.request('GET', `/device/${ties}?period=all`)).json.devEvents === 2,
      'the same-second events written',
    );
  });
  after(async () => {
    await db.close();
    await server.stop();
  });

  test('events: newest first, table column names, ISO times, only this device', async () => {
    const body = await getOk(server, `/device/${mac}/events`);
    assert.deepEqual([body.total, body.offset, body.limit], [12, 0, 100]);
    const events = list(body, 'events');
    const expected = [...seed.events].sort((a, b) => b.at - a.at);
    assert.deepEqual(
      events.map((e) => e.eve_EventType),
      expected.map((e) => e.type),
    );
    assert.deepEqual(
      events.map((e) => Date.parse(String(e.eve_DateTime))),
      expected.map((e) => Math.floor(e.at / 1000) * 1000),
    );
    for (const e of events) {
      assert.deepEqual(Object.keys(e).sort(), [
        'eve_AdditionalInfo',
        'eve_DateTime',
        'eve_EventType',
        'eve_IP',
        'eve_MAC',
        'eve_PendingAlertEmail',
      ]);
      assert.equal(e.eve_MAC, mac);
      assert.match(String(e.eve_DateTime), iso);
      assert.equal(e.eve_IP, '192.0.2.1');
      assert.equal(e.eve_PendingAlertEmail, 0);
    }
    // Any accepted MAC form finds the same history.
    const upper = await getOk(server, `/device/${mac.toUpperCase().replaceAll(':', '-')}/events`);
    assert.deepEqual(upper, body);
  });

  test('events: ?period= selects events at or after the period start', async () => {
    const now = Date.now();
    for (const period of Object.keys(periodDays) as PeriodName[]) {
      const days = periodDays[period];
      const start = days === null ? -Infinity : now - days * 24 * hour;
      const body = await getOk(server, `/device/${mac}/events?period=${encodeURIComponent(period)}`);
      const expected = seed.events.filter((e) => e.at >= start).length;
      assert.equal(body.total, expected, period);
      assert.equal(list(body, 'events').length, expected, period);
    }
  });

  test('sessions: total equals GET /device devSessions for every period; newest connection first', async () => {
    const now = Date.now();
    for (const period of Object.keys(periodDays) as PeriodName[]) {
      const q = `?period=${encodeURIComponent(period)}`;
      const body = await getOk(server, `/device/${mac}/sessions${q}`);
      const device = (await server.request('GET', `/device/${mac}${q}`)).json;
      assert.equal(body.total, device.devSessions, period);
      assert.equal(body.total, expectedStats(seed, period, now).devSessions, period);
      assert.equal(list(body, 'sessions').length, body.total);
    }
    const sessions = list(await getOk(server, `/device/${mac}/sessions`), 'sessions');
    const expected = [...seed.sessions].sort((a, b) => (b.from ?? -Infinity) - (a.from ?? -Infinity));
    assert.deepEqual(
      sessions.map((s) =>
        typeof s.ses_DateTimeConnection === 'string' ? Date.parse(s.ses_DateTimeConnection) : null,
      ),
      expected.map((s) => (s.from === null ? null : Math.floor(s.from / 1000) * 1000)),
    );
    const open = sessions[0];
    assert.ok(open);
    assert.deepEqual(
      [open.ses_StillConnected, open.ses_DateTimeDisconnection, open.ses_EventTypeDisconnection],
      [1, null, ''],
    );
    for (const s of sessions) {
      assert.deepEqual(Object.keys(s).sort(), [
        'ses_AdditionalInfo',
        'ses_DateTimeConnection',
        'ses_DateTimeDisconnection',
        'ses_EventTypeConnection',
        'ses_EventTypeDisconnection',
        'ses_IP',
        'ses_MAC',
        'ses_StillConnected',
      ]);
      assert.equal(s.ses_MAC, mac);
      const end = s.ses_DateTimeDisconnection;
      assert.ok(end === null || (typeof end === 'string' && iso.test(end)), `end ${JSON.stringify(end)}`);
    }
    // The session with no recorded start sorts last.
    assert.equal(sessions.at(-1)?.ses_DateTimeConnection, null);
  });

  test('paging: pages add up to the full list (same-second ties included), total is the whole list', async () => {
    for (const [device, kind] of [
      [mac, 'events'],
      [mac, 'sessions'],
      [ties, 'events'],
    ] as const) {
      const full = list(await getOk(server, `/device/${device}/${kind}?limit=1000`), kind);
      const pages: Json[] = [];
      for (let offset = 0; offset < full.length + 2; offset += 3) {
        const body = await getOk(server, `/device/${device}/${kind}?offset=${offset}&limit=3`);
        assert.deepEqual([body.total, body.offset, body.limit], [full.length, offset, 3]);
        pages.push(...list(body, kind));
      }
      assert.deepEqual(pages, full, `${device} ${kind}`);
    }
    const past = await getOk(server, `/device/${mac}/events?offset=500`);
    assert.deepEqual([list(past, 'events').length, past.total], [0, 12]);
    const period = await getOk(server, `/device/${mac}/sessions?period=1%20month&limit=2&offset=1`);
    assert.equal(list(period, 'sessions').length, 2);
    assert.equal(period.total, expectedStats(seed, '1 month', Date.now()).devSessions);
  });

  test('a device without history has empty lists', async () => {
    const fresh = '02:ee:00:00:00:09';
    await create(server, fresh);
    for (const kind of ['events', 'sessions']) {
      const body = await getOk(server, `/device/${fresh}/${kind}`);
      assert.deepEqual(body, { success: true, [kind]: [], total: 0, offset: 0, limit: 100 });
    }
  });

  test('404 for an unknown device (even with stray history), 400 for a bad MAC, period or paging', async () => {
    const stray = '02:ee:00:00:00:77';
    await db.seedHistory(stray, history(Date.now()));
    for (const kind of ['events', 'sessions']) {
      await assertRejected(server, db, 404, `/device/${stray}/${kind}`, /not found/);
      for (const bad of ['zz:zz:zz:zz:zz:zz', encodeURIComponent("' OR 1=1 --"), 'aa:bb:cc:dd:ee', 'new'])
        await assertRejected(server, db, 400, `/device/${bad}/${kind}`, /is not a MAC address/);
      for (const period of ['2 days', 'ALL', '', "all' OR '1'='1"])
        await assertRejected(
          server,
          db,
          400,
          `/device/${mac}/${kind}?period=${encodeURIComponent(period)}`,
          /period must be one of: 1 day, 7 days, 1 month, 1 year, all/,
        );
      for (const query of badPaging)
        await assertRejected(
          server,
          db,
          400,
          `/device/${mac}/${kind}?${query}`,
          /(limit|offset)'? must be an integer/,
        );
      await assertRejected(server, db, 400, `/device/${mac}/${kind}?status=Down`, /status/);
      await assertRejected(server, db, 400, `/device/${mac}/${kind}?offset=1&offset=2`, /'offset'/);
      for (const token of [null, 'wrong', '']) {
        const res = await server.request('GET', `/device/${mac}/${kind}?limit=99999`, { token });
        assert.equal(res.status, 403);
        assert.deepEqual(res.body, notAuthorizedBody);
      }
    }
  });

  test('the list endpoints appear in OpenAPI with tags, summaries and response schemas', async () => {
    const spec = (await server.request('GET', '/openapi.json', { token: null })).json as {
      paths: Record<
        string,
        Record<
          string,
          { tags?: string[]; summary?: string; responses?: object; parameters?: { name: string }[] }
        >
      >;
      components: { schemas: Record<string, unknown> };
    };
    for (const [path, statuses] of [
      ['/devices', ['200', '400', '403']],
      ['/devices/map', ['200', '400', '403']],
      ['/device/{mac}/events', ['200', '400', '403', '404']],
      ['/device/{mac}/sessions', ['200', '400', '403', '404']],
    ] as const) {
      const operation = spec.paths[path]?.get;
      assert.ok(operation, path);
      assert.deepEqual(operation.tags, ['devices']);
      assert.ok(operation.summary);
      for (const status of statuses)
        assert.ok(operation.responses && status in operation.responses, `${path} ${status}`);
      const names = (operation.parameters ?? []).map((p) => p.name);
      if (path === '/devices/map') continue; // no parameters: always the whole list
      for (const name of ['offset', 'limit']) assert.ok(names.includes(name), `${path} documents ${name}`);
    }
    for (const name of ['DeviceListItem', 'DeviceMapItem', 'DeviceEvent', 'DeviceSession'])
      assert.ok(spec.components.schemas[name], name);
  });
});

onEachStore(
  'delete, events/delete and copy drop the scanner memory (ScanState) of the MAC',
  (_store, start) => {
    let server: InProcessServer;
    let db: Db;
    before(async () => {
      server = await start();
      db = await openTables(server);
    });
    after(async () => {
      await db.close();
      await server.stop();
    });
    const setState = (mac: string): Promise<void> =>
      db.run(
        `INSERT INTO "ScanState" ("mac", "misses", "lastAbsence") VALUES (?, 2, 'Device Down')
       ON CONFLICT ("mac") DO UPDATE SET "misses" = excluded."misses", "lastAbsence" = excluded."lastAbsence"`,
        [mac],
      );
    const hasState = async (mac: string): Promise<boolean> =>
      (await db.value('SELECT COUNT(*) FROM "ScanState" WHERE "mac" = ?', [mac])) === 1;

    test('delete and events/delete remove the row of that MAC only', async () => {
      const [a, b, bystander] = ['02:ff:00:00:00:01', '02:ff:00:00:00:02', '02:ff:00:00:00:03'];
      for (const m of [a, b, bystander]) {
        await create(server, m);
        await setState(m);
      }
      assert.equal((await server.request('DELETE', `/device/${a}/delete`)).status, 200);
      assert.equal((await server.request('DELETE', `/device/${b}/events/delete`)).status, 200);
      assert.deepEqual(
        [await hasState(a), await hasState(b), await hasState(bystander)],
        [false, false, true],
      );
    });

    test('copy removes the target row and keeps the source row', async () => {
      const [from, to] = ['02:ff:00:00:00:11', '02:ff:00:00:00:12'];
      await create(server, from);
      await create(server, to);
      await setState(from);
      await setState(to);
      const res = await server.request('POST', '/device/copy', { body: { macFrom: from, macTo: to } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual([await hasState(from), await hasState(to)], [true, false]);
    });

    test('a 404 delete or copy leaves the ScanState rows alone', async () => {
      const ghost = '02:ff:00:00:00:21';
      const target = '02:ff:00:00:00:22';
      await create(server, target);
      await setState(ghost);
      await setState(target);
      assert.equal((await server.request('DELETE', `/device/${ghost}/delete`)).status, 404);
      assert.equal((await server.request('DELETE', `/device/${ghost}/events/delete`)).status, 404);
      const res = await server.request('POST', '/device/copy', { body: { macFrom: ghost, macTo: target } });
      assert.equal(res.status, 404);
      assert.deepEqual([await hasState(ghost), await hasState(target)], [true, true]);
    });
  },
);
