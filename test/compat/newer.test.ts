/**
 * NetAlertX's 2026 endpoints (DESIGN 17) in process against seeded devices and events: each answer
 * against NetAlertX's shape, the set-alias write as the REST API then shows it, trigger-scan, the
 * host's interfaces, and the Glance widget's query_json.php, which serves the device table from the
 * store and never opens a file for any `file` value. Hostile search input gets a clear 4xx. The
 * endpoints on both stores (test/helpers/stores.ts); trigger-scan with scanning on, SQLite only.
 */
import assert from 'node:assert/strict';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fakeArpScanEnv, fakeArpScanMac, writeFakeArpScan } from '../helpers/fake-arp-scan.js';
import { InProcessServer } from '../helpers/inject.js';
import { openTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';
import { settledCycle } from '../scanner/helpers.js';

type Json = Record<string, unknown>;

const macs = {
  router: 'aa:00:00:00:00:01',
  phone: 'aa:00:00:00:00:02',
  camera: 'aa:00:00:00:00:03',
  old: 'aa:00:00:00:00:04',
} as const;

async function seed(app: InProcessServer): Promise<void> {
  const devices: Record<string, Json> = {
    [macs.router]: { devName: 'Router', devLastIP: '10.0.0.1', devPresentLastScan: 1, devFavorite: 1 },
    [macs.phone]: {
      devName: 'Phone',
      devLastIP: '10.0.0.50',
      devParentMAC: macs.router,
      devParentPort: 4,
      devVendor: 'Acme',
    },
    [macs.camera]: { devName: 'Camera', devLastIP: '10.0.0.77', devParentMAC: macs.router, devAlertDown: 1 },
    [macs.old]: { devName: 'Old router', devIsArchived: 1, devFavorite: 1 },
  };
  for (const [mac, fields] of Object.entries(devices)) {
    const res = await app.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
    assert.equal(res.status, 200, res.text);
  }
  const db = await openTables(app);
  const at = (hoursAgo: number) =>
    new Date(Date.now() - hoursAgo * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
  const event = (mac: string, ip: string, time: string, type: string) =>
    db.run(
      `INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType", "eve_AdditionalInfo", "eve_PendingAlertEmail") VALUES (?, ?, ?, ?, '', 0)`,
      [mac, ip, time, type],
    );
  try {
    // Devices first seen at different times: the camera is the latest.
    const firstSeen: [string, string][] = [
      [macs.router, at(48)],
      [macs.phone, at(30)],
      [macs.camera, at(2)],
      [macs.old, at(500)],
    ];
    for (const [mac, time] of firstSeen)
      await db.run('UPDATE "Devices" SET "devFirstConnection" = ? WHERE "devMac" = ?', [time, mac]);
    for (let i = 0; i < 12; i++) await event(macs.phone, '10.0.0.50', at(1 + i), 'Connected');
    await event(macs.camera, '10.0.0.77', at(2.5), 'New Device');
    await event(macs.camera, '10.0.0.77', at(30), 'Device Down'); // older than 24 h
    // Seen by the server (at once on SQLite; through NOTIFY on PostgreSQL).
    await db.until(async () => {
      const camera = (await app.request('GET', `/device/${macs.camera}?period=all`)).json;
      const views = await Promise.all(firstSeen.map(([mac]) => app.request('GET', `/device/${mac}`)));
      return (
        camera.devEvents === 2 &&
        views.every((v, i) => v.json.devFirstConnection === `${(firstSeen[i]?.[1] ?? '').replace(' ', 'T')}Z`)
      );
    }, 'the seeded first connections and events');
  } finally {
    await db.close();
  }
}

onEachStore('NetAlertX 2026 endpoints', (_store, start) => {
  let app: InProcessServer;
  before(async () => {
    app = await start();
    await seed(app);
  });
  after(async () => {
    await app.stop();
  });

  const macsOf = (list: unknown): string[] => (list as Json[]).map((d) => String(d.devMac));

  test('POST /devices/search: {success, devices} by name, IP or MAC part, a whole MAC in any form; 404 for none', async () => {
    const search = async (body: Json) => app.request('POST', '/devices/search', { body });
    const byName = await search({ query: 'router' });
    assert.equal(byName.status, 200, byName.text);
    assert.equal(byName.json.success, true);
    assert.deepEqual(macsOf(byName.json.devices), [macs.router, macs.old]);
    const device = (byName.json.devices as Json[])[0] as Json;
    assert.equal(device.devName, 'Router');
    assert.equal(device.devLastIP, '10.0.0.1');
    assert.equal(device.devStatus, 'On-line');
    assert.deepEqual(macsOf((await search({ query: '.50' })).json.devices), [macs.phone]);
    assert.deepEqual(macsOf((await search({ query: 'AA-00-00-00-00-03' })).json.devices), [macs.camera]);
    assert.deepEqual(macsOf((await search({ query: 'aa00.0000.0002' })).json.devices), [macs.phone]);
    assert.deepEqual(macsOf((await search({ query: '10.0.0', limit: 2 })).json.devices), [
      macs.router,
      macs.phone,
    ]);
    const none = await search({ query: 'nothing like it' });
    assert.deepEqual([none.status, none.json.success, none.json.code], [404, false, 'NO_DEVICES_FOUND']);
  });

  test('POST /devices/search: a kept answer follows writes by the API and by another connection', async () => {
    const names = async (query: string) => {
      const res = await app.request('POST', '/devices/search', { body: { query } });
      return res.status === 200 ? (res.json.devices as Json[]).map((d) => d.devName) : res.status;
    };
    // Asked twice: the second is the kept answer.
    assert.deepEqual(await names('camera'), ['Camera']);
    assert.deepEqual(await names('camera'), ['Camera']);
    const renamed = await app.request('POST', `/device/${macs.camera}`, { body: { devName: 'Camera 2' } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual(await names('camera'), ['Camera 2']);
    // The items are the list's own: the same as GET /devices?q=.
    const listed = await app.request('GET', '/devices?q=camera');
    const searched = await app.request('POST', '/devices/search', { body: { query: 'camera' } });
    assert.deepEqual(searched.json.devices, listed.json.devices);
    const db = await openTables(app);
    try {
      await db.run('UPDATE "Devices" SET "devName" = ? WHERE "devMac" = ?', ['Camera', macs.camera]);
      await db.run('UPDATE "Devices" SET "devName" = ? WHERE "devMac" = ?', ['Garage camera', macs.phone]);
      await db.until(
        async () => JSON.stringify(await names('camera')) === JSON.stringify(['Garage camera', 'Camera']),
        'the names written by another connection, in the kept answer',
      );
    } finally {
      await db.close();
    }
    const back = await app.request('POST', `/device/${macs.phone}`, { body: { devName: 'Phone' } });
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(await names('camera'), ['Camera']);
  });

  test('POST /devices/search: hostile input is a 400 naming the field, or a plain miss', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /field 'query' is required/],
      [{ query: 42 }, /field 'query' must be string/],
      [{ query: ['router'] }, /field 'query' must be string/],
      [{ query: { $gt: '' } }, /field 'query' must be string/],
      [{ query: null }, /field 'query' must be string/],
      [{ query: '' }, /field 'query' must NOT have fewer than 1 characters/],
      [{ query: '   ' }, /query must not be blank/],
      [{ query: 'x'.repeat(257) }, /field 'query' must NOT have more than 256 characters/],
      [{ query: 'router', limit: 0 }, /field 'limit' must be >= 1/],
      [{ query: 'router', limit: '5' }, /field 'limit' must be integer/],
      [{ query: 'router', extra: 1 }, /unknown field 'extra'/],
      [['router'], /body must be object/],
    ];
    for (const [body, message] of cases) {
      const res = await app.request('POST', '/devices/search', { body });
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(String(res.json.message), message, JSON.stringify(body));
    }
    // A body of megabytes is refused before it is parsed (BODY_LIMIT).
    const huge = await app.request('POST', '/devices/search', {
      body: { query: 'x'.repeat(2 * 1024 * 1024) },
    });
    assert.equal(huge.status, 413, huge.text);
    // Text that only looks like a pattern or a trick is searched literally and finds nothing.
    for (const query of [
      '%',
      '_',
      '\\',
      "' OR 1=1 --",
      'Rout\u0000er',
      '\u202eretuor', // right-to-left override
      'Ro\u0301uter', // combining accent
      'ＲＯＵＴＥＲ', // full-width letters
      '\ud800', // a lone surrogate
      '🦊'.repeat(60),
    ]) {
      const res = await app.request('POST', '/devices/search', { body: { query } });
      assert.deepEqual(
        [res.status, res.json.code],
        [404, 'NO_DEVICES_FOUND'],
        `${JSON.stringify(query)}: ${res.text}`,
      );
    }
    const raw = await app.request('POST', '/devices/search', { rawBody: '{"query": "rou' });
    assert.equal(raw.status, 400, raw.text);
  });

  test('GET /devices/latest and /devices/favorite: NetAlertX arrays of device rows', async () => {
    const latest = await app.request('GET', '/devices/latest');
    assert.equal(latest.status, 200, latest.text);
    assert.deepEqual(macsOf(latest.body), [macs.camera]);
    const favorite = await app.request('GET', '/devices/favorite');
    assert.equal(favorite.status, 200, favorite.text);
    // The favorites counter group: archived favourites are left out.
    assert.deepEqual(macsOf(favorite.body), [macs.router]);
  });

  test('GET /devices/network/topology: a node per device, a link per devParentMAC', async () => {
    const res = await app.request('GET', '/devices/network/topology');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.success, true);
    assert.deepEqual(res.json.nodes, [
      { id: macs.router, name: 'Router', vendor: '' },
      { id: macs.phone, name: 'Phone', vendor: 'Acme' },
      { id: macs.camera, name: 'Camera', vendor: '' },
      { id: macs.old, name: 'Old router', vendor: '' },
    ]);
    assert.deepEqual(res.json.links, [
      { source: macs.router, target: macs.phone, port: 4 },
      { source: macs.router, target: macs.camera, port: null },
    ]);
  });

  test('GET|POST /events/recent (24 h) and /events/last (10 newest)', async () => {
    for (const res of [
      await app.request('GET', '/events/recent'),
      await app.request('POST', '/events/recent'),
      await app.request('POST', '/events/recent', { body: {} }),
    ]) {
      assert.equal(res.status, 200, res.text);
      assert.deepEqual([res.json.success, res.json.hours, res.json.count], [true, 24, 13]);
      const events = res.json.events as Json[];
      assert.equal(events.length, 13);
      assert.ok(events.every((e) => e.eve_EventType !== 'Device Down'));
      assert.deepEqual(events[2], {
        ...events[2],
        eve_MAC: macs.camera,
        eve_EventType: 'New Device',
        devName: 'Camera',
      });
    }
    const narrow = await app.request('POST', '/events/recent', { body: { hours: 48, limit: 3 } });
    assert.deepEqual([narrow.json.hours, narrow.json.count], [48, 3]);
    const query = await app.request('GET', '/events/recent?hours=48');
    assert.equal(query.json.count, 14);
    for (const [method, path, body] of [
      ['GET', '/events/recent?hours=0', undefined],
      ['GET', '/events/recent?hours=721', undefined],
      ['GET', '/events/recent?hours=abc', undefined],
      ['POST', '/events/recent', { hours: '24' }],
      ['POST', '/events/recent', { hours: 24, since: 'x' }],
    ] as const) {
      const res = await app.request(method, path, body === undefined ? {} : { body });
      assert.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${res.text}`);
    }
    for (const res of [await app.request('GET', '/events/last'), await app.request('POST', '/events/last')]) {
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.count, 10);
      const times = (res.json.events as Json[]).map((e) => String(e.eve_DateTime));
      assert.deepEqual(times, [...times].sort().reverse());
    }
  });

  test('POST /device/<mac>/set-alias sets devName as the REST API then shows it', async () => {
    const res = await app.request('POST', `/device/${macs.phone.toUpperCase()}/set-alias`, {
      body: { alias: 'Pixel 9' },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.success, true);
    assert.equal((await app.request('GET', `/device/${macs.phone}`)).json.devName, 'Pixel 9');
    const missing = await app.request('POST', '/device/02:00:00:00:00:99/set-alias', {
      body: { alias: 'x' },
    });
    assert.equal(missing.status, 404, missing.text);
    for (const body of [
      {},
      { alias: '' },
      { alias: 7 },
      { alias: 'x'.repeat(129) },
      { alias: 'a', devName: 'b' },
    ]) {
      const bad = await app.request('POST', `/device/${macs.phone}/set-alias`, { body });
      assert.equal(bad.status, 400, `${JSON.stringify(body)}: ${bad.text}`);
    }
    assert.equal((await app.request('GET', `/device/${macs.phone}`)).json.devName, 'Pixel 9');
  });

  test('/nettools/trigger-scan: a clear 409 when scanning is off', async () => {
    for (const method of ['GET', 'POST'] as const) {
      const res = await app.request(method, '/nettools/trigger-scan');
      assert.deepEqual([res.status, res.json.code], [409, 'SCAN_NOT_CONFIGURED'], res.text);
    }
    const bad = await app.request('POST', '/nettools/trigger-scan', { body: { type: 'SHELL' } });
    assert.equal(bad.status, 400, bad.text);
  });

  test("GET /nettools/interfaces: the host's interfaces and addresses", async () => {
    const res = await app.request('GET', '/nettools/interfaces');
    assert.equal(res.status, 200, res.text);
    const interfaces = res.json.interfaces as Record<string, Json>;
    assert.deepEqual(Object.keys(interfaces).sort(), Object.keys(networkInterfaces()).sort());
    const lo = interfaces.lo as Json;
    assert.equal(lo.type, 'loopback');
    assert.ok((lo.ipv4 as string[]).includes('127.0.0.1/8'), JSON.stringify(lo));
    assert.equal(typeof lo.rx_bytes, 'number');
  });

  test('GET /php/server/query_json.php?file=table_devices.json: {data: [rows]} from the store', async () => {
    const res = await app.request('GET', '/php/server/query_json.php?file=table_devices.json');
    assert.equal(res.status, 200, res.text);
    const rows = res.json.data as Json[];
    assert.deepEqual(macsOf(rows), Object.values(macs));
    assert.deepEqual(
      rows.map((r) => r.devStatus),
      ['On-line', 'Off-line', 'Down', 'Off-line'],
    );
    assert.equal(rows[1]?.devParentMAC, macs.router);
    // What Glance's NetAlertX widget reads from each row, with the types its template expects.
    for (const row of rows)
      assert.deepEqual(
        ['devName', 'devLastIP', 'devStatus', 'devIcon', 'devPresentLastScan'].map((k) => typeof row[k]),
        ['string', 'string', 'string', 'string', 'number'],
      );
  });

  test('query_json.php: any other file is a 404 and nothing is read from disk', async () => {
    // Every way Node opens a file is watched while the requests run.
    const opened: string[] = [];
    const watched = [
      'open',
      'openSync',
      'readFile',
      'readFileSync',
      'createReadStream',
      'statSync',
      'stat',
    ] as const;
    const originals = new Map<string, unknown>();
    const fsRecord = fs as unknown as Record<string, (...args: unknown[]) => unknown>;
    const promises = fs.promises as unknown as Record<string, (...args: unknown[]) => unknown>;
    const originalOpen = promises.open as (...args: unknown[]) => unknown;
    const originalReadFile = promises.readFile as (...args: unknown[]) => unknown;
    for (const name of watched) {
      const original = fsRecord[name] as (...args: unknown[]) => unknown;
      originals.set(name, original);
      fsRecord[name] = (...args: unknown[]) => {
        opened.push(String(args[0]));
        return original.apply(fs, args);
      };
    }
    promises.open = (...args: unknown[]) => {
      opened.push(String(args[0]));
      return originalOpen.apply(fs.promises, args);
    };
    promises.readFile = (...args: unknown[]) => {
      opened.push(String(args[0]));
      return originalReadFile.apply(fs.promises, args);
    };
    syncBuiltinESMExports();
    const answers: [string, number, unknown][] = [];
    try {
      for (const file of [
        'netkeep.db',
        'app.db',
        '../netkeep.db',
        '../../../../etc/passwd',
        '/etc/passwd',
        `${app.dataDir}/netkeep.db`,
        'api_token',
        '%2e%2e%2fnetkeep.db',
        '..%252fnetkeep.db',
        'table_devices.json%00.txt',
        'table_devices.json/../netkeep.db',
        './table_devices.json',
        'TABLE_DEVICES.JSON',
        'table_settings.json',
        'workflows.json',
        '',
      ]) {
        const res = await app.request('GET', `/php/server/query_json.php?file=${encodeURIComponent(file)}`);
        answers.push([file, res.status, res.json.code]);
      }
      const doubled = await app.request(
        'GET',
        '/php/server/query_json.php?file=table_devices.json&file=../netkeep.db',
      );
      answers.push(['two files', doubled.status, doubled.json.code]);
      const post = await app.request('POST', '/php/server/query_json.php?file=workflows.json', { body: {} });
      answers.push(['POST', post.status, post.json.code]);
    } finally {
      for (const [name, original] of originals) fsRecord[name] = original as (...args: unknown[]) => unknown;
      promises.open = originalOpen;
      promises.readFile = originalReadFile;
      syncBuiltinESMExports();
    }
    for (const [file, status, code] of answers.slice(0, -2))
      assert.deepEqual([status, code], [404, 'NOT_OFFERED'], file);
    assert.equal(answers.at(-2)?.[1], 400, 'a repeated file parameter is not a string');
    assert.equal(answers.at(-1)?.[1], 405, 'POST');
    assert.deepEqual(opened, []);
  });

  test('every new endpoint needs the token', async () => {
    for (const [method, path] of [
      ['POST', '/devices/search'],
      ['GET', '/devices/latest'],
      ['GET', '/devices/favorite'],
      ['GET', '/devices/network/topology'],
      ['GET', '/events/recent'],
      ['POST', '/events/last'],
      ['POST', `/device/${macs.phone}/set-alias`],
      ['POST', '/device/open_ports'],
      ['GET', '/nettools/interfaces'],
      ['POST', '/nettools/trigger-scan'],
      ['GET', '/php/server/query_json.php?file=table_devices.json'],
      ['POST', '/mcp'],
    ] as const) {
      const res = await app.request(method, path, {
        token: 'wrong-token',
        body: { query: 'x', alias: 'x', target: macs.router },
      });
      assert.equal(res.status, 403, `${method} ${path}`);
    }
  });
});

describe('/nettools/trigger-scan with scanning on (a stand-in arp-scan on loopback)', () => {
  const toolDir = mkdtempSync(join(tmpdir(), 'netkeep-trigger-'));
  let app: InProcessServer;
  before(async () => {
    writeFakeArpScan(toolDir, 2);
    app = await InProcessServer.start(fakeArpScanEnv(toolDir));
  });
  after(async () => {
    await app.stop();
    rmSync(toolDir, { recursive: true, force: true });
  });

  test('starts a cycle and answers at once; a second trigger while it runs is a 409', async () => {
    const first = await settledCycle(app); // the automatic cycle at start: hosts 0-1
    const res = await app.request('POST', '/nettools/trigger-scan', { body: { type: 'ARPSCAN' } });
    assert.deepEqual([res.status, res.json.success], [200, true], res.text);
    // Answered before the cycle finished: it is still running now.
    const busy = await app.request('GET', '/nettools/trigger-scan');
    assert.deepEqual([busy.status, busy.json.code], [409, 'SCAN_RUNNING'], busy.text);
    const second = await settledCycle(app, String(first.startedAt));
    assert.deepEqual(second.errors, []);
    // The triggered cycle saw the other set of hosts: they are online now.
    const online = await app.request('GET', '/devices/by-status?status=online');
    assert.deepEqual(
      (online.body as Json[]).map((d) => d.id),
      [fakeArpScanMac(2), fakeArpScanMac(3)],
    );
  });
});
