/**
 * The /device/ endpoints against the real app and a real SQLite file: in process (app.inject) where
 * no process is needed, over real HTTP to the real server (child process) for durability across a
 * kill. History is seeded by opening that file directly (the Events/Sessions tables are NetAlertX's).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { defaultDeviceJson, editableFields, storedFields } from '../../src/devices/catalogue.js';
import type { InProcessServer } from '../helpers/inject.js';
import { openTables, type StoreTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';
import { notAuthorizedBody, TestServer, type HttpClient } from '../helpers/server.js';
import { expectedStats, history, periodDays, type PeriodName } from './history.js';

type Db = StoreTables;

/** A unique canonical MAC per call, so tests sharing a server never collide. */
let macCounter = 0;
function newMac(): string {
  macCounter += 1;
  const hex = macCounter.toString(16).padStart(6, '0');
  return `02:aa:bb:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}`;
}

async function create(server: HttpClient, mac: string, fields: Record<string, unknown> = {}): Promise<void> {
  const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
  assert.equal(res.status, 200, res.text);
}

async function getDevice(server: HttpClient, mac: string, query = ''): Promise<Record<string, unknown>> {
  const res = await server.request('GET', `/device/${encodeURIComponent(mac)}${query}`);
  assert.equal(res.status, 200, res.text);
  return res.json;
}

/** Asserts a 4xx with the error body and that the database is exactly as before. */
async function assertRejected(
  server: HttpClient,
  db: Db,
  status: number,
  send: () => Promise<{ status: number; json: Record<string, unknown>; text: string }>,
  messagePattern?: RegExp,
): Promise<void> {
  const before = await db.dump();
  const res = await send();
  assert.equal(res.status, status, res.text);
  assert.equal(res.json.success, false);
  assert.equal(typeof res.json.message, 'string');
  if (messagePattern) assert.match(String(res.json.message), messagePattern);
  assert.equal(await db.dump(), before, 'the database is unchanged');
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

onEachStore('/device endpoints', (_store, start) => {
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

  describe('GET /device/new', () => {
    test('is the catalogue defaults with zero counts and no children', async () => {
      const res = await server.request('GET', '/device/new');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.deepEqual(res.json, {
        ...defaultDeviceJson(),
        devStatus: 'Off-line',
        devSleeping: 0,
        devFlapping: 0,
        devRandomMac: 0,
        devMacs: [],
        devSessions: 0,
        devEvents: 0,
        devDownAlerts: 0,
        devPresenceHours: 0,
        devChildrenDynamic: [],
        devChildrenNicsDynamic: [],
      });
      for (const f of storedFields) assert.ok(Object.hasOwn(res.json, f.name), f.name);
    });
  });

  describe('create', () => {
    test('unset fields take defaults, first/last connection are now, devGUID is fresh', async () => {
      const mac = newMac();
      const startedAt = Math.floor(Date.now() / 1000) * 1000;
      await create(server, mac, { devName: 'Laptop', devFavorite: true, devParentPort: 3 });
      const finishedAt = Date.now();
      const device = await getDevice(server, mac);
      assert.equal(device.devMac, mac);
      assert.equal(device.devName, 'Laptop');
      assert.equal(device.devFavorite, 1);
      assert.equal(device.devParentPort, 3);
      assert.equal(device.devOwner, '');
      assert.equal(device.devScan, 1);
      assert.equal(device.devParentRelType, 'default');
      assert.deepEqual(device.devCustomProps, []);
      assert.match(String(device.devGUID), uuid);
      for (const name of ['devFirstConnection', 'devLastConnection']) {
        const at = Date.parse(String(device[name]));
        assert.match(String(device[name]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
        assert.ok(at >= startedAt && at <= finishedAt, `${name} is the creation time`);
      }
      const other = newMac();
      await create(server, other);
      assert.notEqual((await getDevice(server, other)).devGUID, device.devGUID);
    });

    test('given times are kept (with an offset converted to UTC) and a client devGUID is ignored', async () => {
      const mac = newMac();
      await create(server, mac, {
        devFirstConnection: '2024-01-02T03:04:05+02:00',
        devLastConnection: '2024-02-03 04:05:06',
        devGUID: 'not-mine',
      });
      const device = await getDevice(server, mac);
      assert.equal(device.devFirstConnection, '2024-01-02T01:04:05Z');
      assert.equal(device.devLastConnection, '2024-02-03T04:05:06Z');
      assert.match(String(device.devGUID), uuid);
    });

    test('409 when the device exists, and nothing changes', async () => {
      const mac = newMac();
      await create(server, mac, { devName: 'first' });
      await assertRejected(
        server,
        db,
        409,
        () =>
          server.request('POST', `/device/${mac.toUpperCase()}`, {
            body: { createNew: true, devName: 'second' },
          }),
        /already exists/,
      );
    });

    test('a devMac in the body that differs from the path is a 400; an equal one is ignored', async () => {
      const mac = newMac();
      await assertRejected(server, db, 400, () =>
        server.request('POST', `/device/${mac}`, { body: { createNew: true, devMac: '02:00:00:00:00:00' } }),
      );
      await create(server, mac, { devMac: mac.toUpperCase().replace(/:/g, '-') });
      assert.equal((await getDevice(server, mac)).devMac, mac);
    });
  });

  describe('update', () => {
    test('sets only the given fields', async () => {
      const mac = newMac();
      await create(server, mac, { devName: 'old', devOwner: 'alice', devComments: 'keep' });
      const res = await server.request('POST', `/device/${mac}`, {
        body: {
          devName: 'new',
          devOwner: '',
          devAlertDown: 1,
          devParentPort: null,
          devCustomProps: [{ a: 1 }],
        },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { success: true });
      const device = await getDevice(server, mac);
      assert.equal(device.devName, 'new');
      assert.equal(device.devOwner, '');
      assert.equal(device.devComments, 'keep');
      assert.equal(device.devAlertDown, 1);
      assert.equal(device.devParentPort, null);
      assert.deepEqual(device.devCustomProps, [{ a: 1 }]);
    });

    test('a device object echoed back from GET is accepted and changes nothing', async () => {
      const mac = newMac();
      await create(server, mac, { devName: 'echo' });
      const device = await getDevice(server, mac);
      const before = await db.dump();
      const res = await server.request('POST', `/device/${mac}`, { body: device });
      assert.equal(res.status, 200, res.text);
      assert.equal(await db.dump(), before);
    });

    test('404 for a device that does not exist, and nothing is created', async () => {
      const mac = newMac();
      await assertRejected(server, db, 404, () =>
        server.request('POST', `/device/${mac}`, { body: { devName: 'ghost' } }),
      );
      await assertRejected(server, db, 404, () =>
        server.request('POST', `/device/${mac}`, { body: { createNew: false } }),
      );
    });

    test('invalid time text is a 400 naming the field', async () => {
      const mac = newMac();
      await create(server, mac);
      for (const value of ['yesterday', '2024-13-01T00:00:00Z', '2024-02-30T25:00:00Z', '']) {
        await assertRejected(
          server,
          db,
          400,
          () => server.request('POST', `/device/${mac}`, { body: { devLastNotification: value } }),
          /devLastNotification/,
        );
      }
    });
  });

  describe('MAC forms', () => {
    test('upper, lower, dashed, dotted and bare forms find the same device', async () => {
      const mac = newMac();
      await create(server, mac.replace(/:/g, '-').toUpperCase(), { devName: 'forms' });
      const digits = mac.replace(/:/g, '');
      const forms = [
        mac,
        mac.toUpperCase(),
        mac.replace(/:/g, '-'),
        mac.replace(/:/g, '-').toUpperCase(),
        `${digits.slice(0, 4)}.${digits.slice(4, 8)}.${digits.slice(8)}`,
        digits,
        digits.toUpperCase(),
      ];
      for (const form of forms) {
        const device = await getDevice(server, form);
        assert.equal(device.devMac, mac, form);
        assert.equal(device.devName, 'forms');
      }
      assert.equal(await db.value('SELECT COUNT(*) FROM "Devices" WHERE "devMac" = ?', [mac]), 1);
    });
  });

  describe('delete', () => {
    test('removes the device, its events and sessions, and clears its children; others untouched', async () => {
      const parent = newMac();
      const child = newMac();
      const bystander = newMac();
      await create(server, parent);
      await create(server, child, { devParentMAC: parent.toUpperCase() });
      await create(server, bystander, { devParentMAC: newMac() });
      const seed = history(Date.now());
      await db.seedHistory(parent, seed);
      await db.seedHistory(bystander, seed);
      const bystanderRows = async (): Promise<unknown[]> => [
        await db.all('SELECT * FROM "Events" WHERE "eve_MAC" = ?', [bystander]),
        await db.all('SELECT * FROM "Sessions" WHERE "ses_MAC" = ?', [bystander]),
        await db.all('SELECT * FROM "Devices" WHERE "devMac" = ?', [bystander]),
      ];
      const before = await bystanderRows();
      assert.equal((await getDevice(server, child)).devParentMAC, parent);

      const res = await server.request('DELETE', `/device/${parent}/delete`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { success: true });
      assert.equal((await server.request('GET', `/device/${parent}`)).status, 404);
      assert.equal(await db.value('SELECT COUNT(*) FROM "Events" WHERE "eve_MAC" = ?', [parent]), 0);
      assert.equal(await db.value('SELECT COUNT(*) FROM "Sessions" WHERE "ses_MAC" = ?', [parent]), 0);
      assert.equal((await getDevice(server, child)).devParentMAC, '');
      assert.deepEqual(await bystanderRows(), before);

      await assertRejected(server, db, 404, () => server.request('DELETE', `/device/${parent}/delete`));
    });
  });

  describe('events/delete', () => {
    test("removes the device's events and sessions; the device and other devices stay", async () => {
      const mac = newMac();
      const other = newMac();
      await create(server, mac, { devName: 'keeps' });
      await create(server, other);
      const seed = history(Date.now());
      await db.seedHistory(mac, seed);
      await db.seedHistory(other, seed);
      const otherRows = async (): Promise<unknown[]> => [
        await db.all('SELECT * FROM "Events" WHERE "eve_MAC" = ?', [other]),
        await db.all('SELECT * FROM "Sessions" WHERE "ses_MAC" = ?', [other]),
      ];
      const before = await otherRows();
      const res = await server.request('DELETE', `/device/${mac}/events/delete`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { success: true });
      const device = await getDevice(server, mac);
      assert.equal(device.devName, 'keeps');
      assert.equal(device.devEvents, 0);
      assert.equal(device.devSessions, 0);
      assert.equal(device.devPresenceHours, 0);
      assert.deepEqual(await otherRows(), before);
      assert.ok((before[0] as unknown[]).length > 0);
    });

    test('404 for a device that does not exist, even when it has stray events', async () => {
      const mac = newMac();
      await db.seedHistory(mac, history(Date.now()));
      await assertRejected(server, db, 404, () => server.request('DELETE', `/device/${mac}/events/delete`));
    });
  });

  describe('reset-props', () => {
    test('resets devCustomProps with no body, an empty object or any object', async () => {
      const mac = newMac();
      await create(server, mac, { devCustomProps: [{ name: 'x', value: 'y' }] });
      for (const options of [{}, { body: {} }, { body: { anything: 'ignored' } }]) {
        await server.request('POST', `/device/${mac}/update-column`, {
          body: { columnName: 'devCustomProps', columnValue: [{ k: 1 }] },
        });
        assert.deepEqual((await getDevice(server, mac)).devCustomProps, [{ k: 1 }]);
        const res = await server.request('POST', `/device/${mac}/reset-props`, options);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, { success: true });
        assert.deepEqual((await getDevice(server, mac)).devCustomProps, []);
      }
    });

    test('400 for a body that is not an object, 404 for a missing device', async () => {
      const mac = newMac();
      await create(server, mac);
      for (const rawBody of ['[]', '"x"', '1', 'null']) {
        await assertRejected(server, db, 400, () =>
          server.request('POST', `/device/${mac}/reset-props`, { rawBody }),
        );
      }
      await assertRejected(server, db, 404, () => server.request('POST', `/device/${newMac()}/reset-props`));
    });
  });

  describe('copy', () => {
    test('copies every stored field but devMac to a new device, with a fresh devGUID', async () => {
      const from = newMac();
      const to = newMac();
      await create(server, from, {
        devName: 'source',
        devOwner: 'bob',
        devFavorite: 1,
        devParentPort: 7,
        devCustomProps: [{ p: 'q' }],
        devLastNotification: '2024-05-01T10:00:00Z',
      });
      const res = await server.request('POST', '/device/copy', {
        body: { macFrom: from.toUpperCase(), macTo: to.replace(/:/g, '') },
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { success: true, message: `Device copied from ${from} to ${to}` });
      const source = await getDevice(server, from);
      const target = await getDevice(server, to);
      for (const f of storedFields) {
        if (f.name === 'devMac' || f.name === 'devGUID') continue;
        assert.deepEqual(target[f.name], source[f.name], f.name);
      }
      assert.equal(target.devMac, to);
      assert.match(String(target.devGUID), uuid);
      assert.notEqual(target.devGUID, source.devGUID);
    });

    test("replaces an existing target; the target's own events and sessions are kept", async () => {
      const from = newMac();
      const to = newMac();
      await create(server, from, { devName: 'source', devComments: '' });
      await create(server, to, { devName: 'target', devComments: 'target only', devOwner: 'carol' });
      await db.seedHistory(to, history(Date.now()));
      const targetEvents = await db.all('SELECT * FROM "Events" WHERE "eve_MAC" = ?', [to]);
      const res = await server.request('POST', '/device/copy', { body: { macFrom: from, macTo: to } });
      assert.equal(res.status, 200, res.text);
      const target = await getDevice(server, to);
      assert.equal(target.devName, 'source');
      assert.equal(target.devComments, '');
      assert.equal(target.devOwner, '');
      assert.deepEqual(await db.all('SELECT * FROM "Events" WHERE "eve_MAC" = ?', [to]), targetEvents);
      assert.equal(await db.value('SELECT COUNT(*) FROM "Devices" WHERE "devMac" = ?', [to]), 1);
    });

    test('a missing source is a 404 and leaves the target untouched', async () => {
      const to = newMac();
      await create(server, to, { devName: 'untouched' });
      await assertRejected(
        server,
        db,
        404,
        () => server.request('POST', '/device/copy', { body: { macFrom: newMac(), macTo: to } }),
        /not found/,
      );
    });

    test('400 when macFrom or macTo is missing, not a MAC, or both are the same device', async () => {
      const mac = newMac();
      await create(server, mac);
      const bodies: unknown[] = [
        {},
        { macFrom: mac },
        { macTo: mac },
        { macFrom: mac, macTo: 'not-a-mac' },
        { macFrom: "' OR 1=1 --", macTo: mac },
        { macFrom: mac, macTo: 5 },
        { macFrom: mac, macTo: mac.toUpperCase() },
        { macFrom: mac, macTo: newMac(), extra: 1 },
      ];
      for (const body of bodies)
        await assertRejected(server, db, 400, () => server.request('POST', '/device/copy', { body }));
    });
  });

  describe('update-column', () => {
    test('sets each kind of field; 0, false, "" and null (where allowed) are valid values', async () => {
      const mac = newMac();
      await create(server, mac, {
        devName: 'x',
        devFavorite: 1,
        devParentPort: 8,
        devLastNotification: '2024-01-01',
      });
      const cases: [string, unknown, unknown][] = [
        ['devName', '', ''],
        ['devName', 'renamed', 'renamed'],
        ['devFavorite', 0, 0],
        ['devFavorite', true, 1],
        ['devFavorite', false, 0],
        ['devParentPort', 0, 0],
        ['devParentPort', null, null],
        ['devLastNotification', '2024-03-04T05:06:07Z', '2024-03-04T05:06:07Z'],
        ['devLastNotification', null, null],
        ['devCustomProps', [{ a: 'b' }], [{ a: 'b' }]],
        ['devCustomProps', [], []],
        ['devPresentLastScan', 1, 1],
        ['devLastIP', '192.0.2.7', '192.0.2.7'],
        ['devParentMAC', 'AABB.CCDD.EEFF', 'aa:bb:cc:dd:ee:ff'],
      ];
      for (const [columnName, columnValue, stored] of cases) {
        const res = await server.request('POST', `/device/${mac}/update-column`, {
          body: { columnName, columnValue },
        });
        assert.equal(res.status, 200, `${columnName}=${JSON.stringify(columnValue)}: ${res.text}`);
        assert.deepEqual(res.body, { success: true });
        assert.deepEqual((await getDevice(server, mac))[columnName], stored, columnName);
      }
    });

    test('400 when columnName or columnValue is missing', async () => {
      const mac = newMac();
      await create(server, mac);
      for (const body of [
        {},
        { columnName: 'devName' },
        { columnValue: 'x' },
        { columnName: null, columnValue: 1 },
      ])
        await assertRejected(server, db, 400, () =>
          server.request('POST', `/device/${mac}/update-column`, { body }),
        );
    });

    test('400 naming a columnName outside the editable set (incl. SQL and prototype names)', async () => {
      const mac = newMac();
      await create(server, mac);
      const names = [
        'devMac',
        'devGUID',
        'devStatus',
        'devSessions',
        'nope',
        'devName = 1; DROP TABLE Devices; --',
        "devName' OR '1'='1",
        'devName--',
        'DEVNAME',
        'constructor',
        'toString',
        'rowid',
        '',
      ];
      for (const columnName of names) {
        const res = await server.request('POST', `/device/${mac}/update-column`, {
          body: { columnName, columnValue: 'x' },
        });
        assert.equal(res.status, 400, columnName);
        assert.ok(String(res.json.message).includes(`'${columnName}'`), `names ${columnName}: ${res.text}`);
      }
      assert.ok((await db.tableNames()).includes('Devices'));
    });

    test('404 for a device that does not exist', async () => {
      await assertRejected(server, db, 404, () =>
        server.request('POST', `/device/${newMac()}/update-column`, {
          body: { columnName: 'devName', columnValue: 'x' },
        }),
      );
    });
  });

  describe('computed fields', () => {
    test('devStatus for each combination of devPresentLastScan x devAlertDown, also in children', async () => {
      const parent = newMac();
      await create(server, parent, { devPresentLastScan: 1 });
      const combos: [number, number, string][] = [
        [1, 0, 'On-line'],
        [1, 1, 'On-line'],
        [0, 1, 'Down'],
        [0, 0, 'Off-line'],
      ];
      const children: Record<string, string> = {};
      for (const [present, alertDown, status] of combos) {
        const mac = newMac();
        children[mac] = status;
        await create(server, mac, {
          devPresentLastScan: present,
          devAlertDown: alertDown,
          devParentMAC: parent,
          devParentRelType: present === 1 ? 'nic' : 'default',
          devParentPort: 2,
          devLastIP: '192.0.2.9',
          devName: `child ${status}`,
        });
        assert.equal((await getDevice(server, mac)).devStatus, status, `${present} x ${alertDown}`);
      }
      const device = await getDevice(server, parent);
      assert.equal(device.devStatus, 'On-line');
      const dynamic = device.devChildrenDynamic as Record<string, unknown>[];
      assert.equal(dynamic.length, 4);
      for (const child of dynamic) {
        assert.deepEqual(Object.keys(child).sort(), [
          'devLastIP',
          'devMac',
          'devName',
          'devParentPort',
          'devParentRelType',
          'devStatus',
        ]);
        assert.equal(child.devStatus, children[String(child.devMac)]);
        assert.equal(child.devParentPort, 2);
        assert.equal(child.devLastIP, '192.0.2.9');
      }
      const nics = device.devChildrenNicsDynamic as Record<string, unknown>[];
      assert.deepEqual(
        nics.map((c) => c.devMac).sort(),
        dynamic
          .filter((c) => c.devParentRelType === 'nic')
          .map((c) => c.devMac)
          .sort(),
      );
      assert.equal(nics.length, 2);
      assert.deepEqual((await getDevice(server, newMacOf(dynamic[0]))).devChildrenDynamic, []);
    });

    test('counts and presence hours for every period, with straddling and open sessions', async () => {
      const mac = newMac();
      await create(server, mac);
      const t0 = Math.floor(Date.now() / 1000) * 1000;
      const seed = history(t0);
      await db.seedHistory(mac, seed);
      await db.seedHistory(newMac(), seed); // another device's history never counts
      for (const period of [...Object.keys(periodDays), undefined] as (PeriodName | undefined)[]) {
        const sentAt = Math.floor(Date.now() / 1000) * 1000 - 1000;
        const query = period === undefined ? '' : `?period=${encodeURIComponent(period)}`;
        const device = await getDevice(server, mac, query);
        const answeredAt = Date.now() + 1000;
        // The server's "now" lies between sentAt and answeredAt: the open session's hours grow
        // with it, so the expected value is a range, not a point.
        const low = expectedStats(seed, period ?? 'all', sentAt);
        const high = expectedStats(seed, period ?? 'all', answeredAt);
        assert.equal(device.devSessions, low.devSessions, `${period} sessions`);
        assert.equal(device.devEvents, low.devEvents, `${period} events`);
        assert.equal(device.devDownAlerts, low.devDownAlerts, `${period} down alerts`);
        const hours = Number(device.devPresenceHours);
        assert.ok(
          hours >= Math.round(low.hours * 100) / 100 - 0.01 &&
            hours <= Math.round(high.hours * 100) / 100 + 0.01,
          `${period}: ${hours} within [${low.hours}, ${high.hours}]`,
        );
        assert.equal(Math.round(hours * 100) / 100, hours, 'two decimals');
      }
      // `1 day` by hand: 4 h of the straddling session + 2 h open; 3 sessions; 2 events, 1 down.
      const day = await getDevice(server, mac, '?period=1+day');
      assert.deepEqual([day.devSessions, day.devEvents, day.devDownAlerts], [3, 2, 1]);
      assert.ok(Math.abs(Number(day.devPresenceHours) - 6) < 0.05);
    });

    test('an unknown period is a 400 naming the allowed values', async () => {
      const mac = newMac();
      await create(server, mac);
      for (const period of ['2 days', 'ALL', '1%20DAY', '', '7days']) {
        const res = await server.request('GET', `/device/${mac}?period=${period}`);
        assert.equal(res.status, 400, period);
        assert.match(String(res.json.message), /1 day, 7 days, 1 month, 1 year, all/);
      }
    });
  });
});

/** The MAC of a child element (typed helper for the children arrays). */
function newMacOf(child: Record<string, unknown> | undefined): string {
  assert.ok(child);
  return String(child.devMac);
}

onEachStore('/device errors common to every endpoint', (_store, start) => {
  let server: InProcessServer;
  let db: Db;
  let mac: string;
  before(async () => {
    server = await start();
    db = await openTables(server);
    mac = newMac();
    await create(server, mac, { devName: 'present' });
  });
  after(async () => {
    await db.close();
    await server.stop();
  });

  const endpoints = (m: string): [string, string, unknown][] => [
    ['GET', `/device/${m}`, undefined],
    ['POST', `/device/${m}`, { devName: 'x' }],
    ['DELETE', `/device/${m}/delete`, undefined],
    ['DELETE', `/device/${m}/events/delete`, undefined],
    ['POST', `/device/${m}/reset-props`, {}],
    ['POST', `/device/${m}/update-column`, { columnName: 'devName', columnValue: 'x' }],
  ];

  test('403 on every endpoint for a missing or wrong token, even with a bad body', async () => {
    const all: [string, string, unknown][] = [
      ...endpoints(mac),
      ['GET', '/device/new', undefined],
      ['POST', '/device/copy', { macFrom: mac, macTo: newMac() }],
    ];
    for (const [method, path, body] of all) {
      for (const token of [null, 'wrong', '']) {
        const before = await db.dump();
        const res = await server.request(method, path, { token, body });
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.deepEqual(res.body, notAuthorizedBody);
        if (method !== 'GET') {
          const bad = await server.request(method, path, {
            token,
            rawBody: '{broken',
            contentType: 'text/plain',
          });
          assert.equal(bad.status, 403, `${method} ${path} with a bad body`);
        }
        assert.equal(await db.dump(), before);
      }
    }
  });

  test('400 for a path MAC that is not a MAC, on every endpoint (incl. traversal and SQL)', async () => {
    const bad = [
      encodeURIComponent('../../etc/passwd'),
      encodeURIComponent("' OR 1=1 --"),
      encodeURIComponent("aa:bb:cc:dd:ee:ff' OR '1'='1"),
      'zz:zz:zz:zz:zz:zz',
      'aa:bb:cc:dd:ee',
      'aa:bb-cc:dd:ee:ff',
      encodeURIComponent('ａａ:bb:cc:dd:ee:ff'),
      '-aabbccddeeff',
    ];
    for (const m of bad) {
      for (const [method, path, body] of endpoints(m)) {
        await assertRejected(
          server,
          db,
          400,
          () => server.request(method, path, { body }),
          /is not a MAC address/,
        );
      }
    }
    // `new` is a template only on GET: /device/new itself is that route's path (405 for any other
    // method, as for /device/copy); below it, `new` is a path MAC that is not a MAC.
    for (const [method, path, body] of endpoints('new').slice(1)) {
      const status = path === '/device/new' ? 405 : 400;
      await assertRejected(server, db, status, () => server.request(method, path, { body }));
    }
  });

  test('404 for a device that does not exist, on every endpoint', async () => {
    const missing = newMac();
    for (const [method, path, body] of endpoints(missing))
      await assertRejected(server, db, 404, () => server.request(method, path, { body }), /not found/);
    await assertRejected(server, db, 404, () =>
      server.request('POST', '/device/copy', { body: { macFrom: missing, macTo: mac } }),
    );
  });

  test('the device endpoints appear in OpenAPI with tags, summaries and response schemas', async () => {
    const spec = (await server.request('GET', '/openapi.json', { token: null })).json as {
      paths: Record<string, Record<string, { tags?: string[]; summary?: string; responses?: object }>>;
      components: { schemas: Record<string, unknown> };
    };
    const expected: [string, string][] = [
      ['/device/new', 'get'],
      ['/device/{mac}', 'get'],
      ['/device/{mac}', 'post'],
      ['/device/{mac}/delete', 'delete'],
      ['/device/{mac}/events/delete', 'delete'],
      ['/device/{mac}/reset-props', 'post'],
      ['/device/copy', 'post'],
      ['/device/{mac}/update-column', 'post'],
    ];
    for (const [path, method] of expected) {
      const operation = spec.paths[path]?.[method];
      assert.ok(operation, `${method} ${path}`);
      assert.deepEqual(operation.tags, ['devices']);
      assert.ok(operation.summary);
      assert.ok(operation.responses && '200' in operation.responses && '403' in operation.responses);
    }
    assert.ok(spec.components.schemas.Device);
  });
});

onEachStore('/device hostile input', (store, start) => {
  let server: InProcessServer;
  let db: Db;
  let mac: string;
  before(async () => {
    server = await start();
    db = await openTables(server);
    mac = newMac();
    await create(server, mac, { devName: 'target' });
  });
  after(async () => {
    await db.close();
    await server.stop();
  });

  const wrongValues: Record<string, unknown[]> = {
    text: [1, true, null, [], {}, ['a'], 'x'.repeat(16_385)],
    flag: [2, -1, 0.5, '1', 'true', null, [], {}],
    port: ['80', 65_536, -1, 1.5, true, [], {}],
    time: [5, true, [], {}, 'not a time', '2024-13-45T00:00:00Z', '-1 day'],
    json: [{}, '[]', [1], ['a'], [[]], 3, null, true],
  };

  test('wrong JSON types for every editable field: 400 on POST and update-column, nothing changes', async () => {
    for (const f of editableFields) {
      for (const value of wrongValues[f.kind] ?? []) {
        const label = `${f.name}=${JSON.stringify(value).slice(0, 30)}`;
        const before = await db.dump();
        const post = await server.request('POST', `/device/${mac}`, { body: { [f.name]: value } });
        assert.equal(post.status, 400, `POST ${label}: ${post.text}`);
        assert.ok(String(post.json.message).includes(f.name), `POST names ${f.name}: ${post.text}`);
        const column = await server.request('POST', `/device/${mac}/update-column`, {
          body: { columnName: f.name, columnValue: value },
        });
        assert.equal(column.status, 400, `update-column ${label}: ${column.text}`);
        assert.ok(String(column.json.message).includes(f.name));
        assert.equal(await db.dump(), before, label);
      }
    }
    for (const value of [1, 'yes', null]) {
      await assertRejected(server, db, 400, () =>
        server.request('POST', `/device/${mac}`, { body: { createNew: value } }),
      );
    }
  });

  test('unknown fields are a 400 naming them (also SQL in a field name)', async () => {
    for (const name of ['devNmae', 'foo', 'devName = 1; --', 'devName; DROP TABLE Devices']) {
      await assertRejected(
        server,
        db,
        400,
        () => server.request('POST', `/device/${mac}`, { body: { devName: 'ok', [name]: 'x' } }),
        new RegExp(`unknown field '${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}'`),
      );
    }
  });

  test('non-JSON bodies are 415, invalid JSON 400, oversized bodies 413, __proto__ keys 400', async () => {
    const paths = [
      `/device/${mac}`,
      `/device/${mac}/update-column`,
      '/device/copy',
      `/device/${mac}/reset-props`,
    ];
    for (const path of paths) {
      for (const contentType of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
      ])
        await assertRejected(server, db, 415, () =>
          server.request('POST', path, { rawBody: 'devName=x', contentType }),
        );
      for (const rawBody of ['{', '{"devName":', "{'devName':'x'}", '{"devName":"x"}}'])
        await assertRejected(server, db, 400, () => server.request('POST', path, { rawBody }));
      await assertRejected(server, db, 413, () =>
        server.request('POST', path, { rawBody: JSON.stringify({ devComments: 'x'.repeat(70_000) }) }),
      );
      for (const rawBody of [
        '{"__proto__":{"devName":"x"}}',
        '{"devName":"x","__proto__":{"isAdmin":true}}',
        '{"constructor":{"prototype":{"x":1}}}',
        '{"columnName":"devName","columnValue":{"__proto__":{"a":1}}}',
      ])
        await assertRejected(server, db, 400, () => server.request('POST', path, { rawBody }));
    }
  });

  test('SQL metacharacters in every text field are stored verbatim and touch nothing else', async () => {
    const hostile = [
      "'; DROP TABLE Devices; --",
      '" OR 1=1 --',
      "x' UNION SELECT * FROM Events --",
      '%_\\*?;/**/',
      'Robert\u0000Tables',
    ];
    const textFields = editableFields.filter((f) => f.kind === 'text');
    const others = async (): Promise<string> =>
      JSON.stringify([
        await db.all('SELECT * FROM "Devices" WHERE "devMac" <> ? ORDER BY "devMac"', [mac]),
        await db.value('SELECT COUNT(*) FROM "Events"'),
        await db.value('SELECT COUNT(*) FROM "Sessions"'),
        await db.tableNames(),
      ]);
    const before = await others();
    for (const value of hostile) {
      const body = Object.fromEntries(textFields.map((f) => [f.name, value]));
      if (store === 'PostgreSQL' && value.includes('\u0000')) {
        // PostgreSQL's text cannot hold U+0000 (docs/postgresql.md): a 400 naming it, nothing written.
        const stored = await db.dump();
        for (const send of [
          () => server.request('POST', `/device/${mac}`, { body }),
          () => server.request('POST', `/device/${newMac()}`, { body: { ...body, createNew: true } }),
          () =>
            server.request('POST', `/device/${mac}/update-column`, {
              body: { columnName: 'devComments', columnValue: value },
            }),
          () => server.request('POST', '/devices/bulk', { body: { macs: [mac], set: { devOwner: value } } }),
        ]) {
          const refused = await send();
          assert.equal(refused.status, 400, refused.text);
          assert.equal(refused.json.code, 'NUL_CHARACTER');
          assert.match(String(refused.json.message), /NUL character \(U\+0000\)/);
        }
        assert.equal(await db.dump(), stored);
        continue;
      }
      const res = await server.request('POST', `/device/${mac}`, { body });
      assert.equal(res.status, 200, res.text);
      const device = await getDevice(server, mac);
      for (const f of textFields) assert.equal(device[f.name], value, f.name);
      for (const f of textFields) {
        const column = await server.request('POST', `/device/${mac}/update-column`, {
          body: { columnName: f.name, columnValue: `${value}!` },
        });
        assert.equal(column.status, 200);
      }
      const again = await getDevice(server, mac);
      for (const f of textFields) assert.equal(again[f.name], `${value}!`, f.name);
    }
    assert.equal(await others(), before);
  });
});

describe('/device durability', () => {
  test('a write acknowledged with 200 survives kill -9 and a restart on the same DATA_DIR', async () => {
    const first = await TestServer.start();
    const mac = newMac();
    const other = newMac();
    await create(first, mac, { devName: 'durable' });
    await create(first, other);
    const column = await first.request('POST', `/device/${mac}/update-column`, {
      body: { columnName: 'devComments', columnValue: 'written before the crash' },
    });
    assert.equal(column.status, 200);
    const copy = await first.request('POST', '/device/copy', { body: { macFrom: mac, macTo: other } });
    assert.equal(copy.status, 200);
    await first.kill();

    const second = await TestServer.start({ dataDir: first.dataDir });
    try {
      for (const m of [mac, other]) {
        const device = await getDevice(second, m);
        assert.equal(device.devName, 'durable');
        assert.equal(device.devComments, 'written before the crash');
      }
    } finally {
      await second.stop();
      await first.stop();
    }
  });
});
