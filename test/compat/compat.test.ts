/**
 * NetAlertX's endpoints against seeded devices and history, over real HTTP against the real
 * server: shapes and conditions of /devices/by-status, the CSV/JSON export and the CSV import
 * (round trip, upsert never wipes, hostile input), /events?mac=, /sessions/totals, CORS and the
 * endpoints that are deliberately absent. The endpoints and the CSV round trip on both stores
 * (test/helpers/stores.ts), the history seeded from another connection as the scanner writes it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { storedFields } from '../../src/devices/catalogue.js';
import type { InProcessServer } from '../helpers/inject.js';
import { notAuthorizedBody, TestServer } from '../helpers/server.js';
import { openTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';

type Json = Record<string, unknown>;

const macs = {
  online: 'aa:00:00:00:00:01',
  favourite: 'aa:00:00:00:00:02',
  fresh: 'aa:00:00:00:00:03',
  down: 'aa:00:00:00:00:04',
  archived: 'aa:00:00:00:00:05',
  offline: 'aa:00:00:00:00:06',
} as const;

async function seed(server: InProcessServer): Promise<void> {
  const devices: Record<string, Json> = {
    [macs.online]: { devName: 'Router', devPresentLastScan: 1, devIsNew: 0 },
    [macs.favourite]: { devName: 'Phone', devFavorite: 1, devIsNew: 0, devPresentLastScan: 1 },
    [macs.fresh]: { devName: '=HYPERLINK("http://evil")', devIsNew: 1 },
    [macs.down]: { devName: 'Camera "front"', devAlertDown: 1, devIsNew: 0 },
    [macs.archived]: { devName: 'Old', devIsArchived: 1, devFavorite: 1, devIsNew: 1, devPresentLastScan: 1 },
    [macs.offline]: { devName: 'Laptop, work', devIsNew: 0, devComments: 'line one\nline two' },
  };
  for (const [mac, fields] of Object.entries(devices)) {
    const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
    assert.equal(res.status, 200, res.text);
  }
  const db = await openTables(server);
  const now = Date.now();
  const at = (hoursAgo: number) =>
    new Date(now - hoursAgo * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
  const event = (...values: unknown[]) =>
    db.run(
      'INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType", "eve_AdditionalInfo", "eve_PendingAlertEmail") VALUES (?, ?, ?, ?, ?, 0)',
      values,
    );
  const session = (...values: unknown[]) =>
    db.run(
      `INSERT INTO "Sessions" ("ses_MAC", "ses_IP", "ses_EventTypeConnection", "ses_DateTimeConnection", "ses_EventTypeDisconnection",
         "ses_DateTimeDisconnection", "ses_StillConnected", "ses_AdditionalInfo") VALUES (?, '10.0.0.1', ?, ?, ?, ?, ?, '')`,
      values,
    );
  try {
    await event(macs.online, '10.0.0.1', at(1), 'Connected', '');
    await event(macs.online, '10.0.0.1', at(2), 'New Device', '');
    await event(macs.online, '10.0.0.2', at(3), 'IP Changed', '10.0.0.1');
    await event(macs.down, '10.0.0.4', at(5), 'Device Down', '');
    await event(macs.down, '10.0.0.4', at(24 * 30), 'Device Down', ''); // outside 7 days
    await event(macs.fresh, '10.0.0.3', at(6), 'VOIDED - Connected', '');
    await session(macs.online, 'Connected', at(1), '', null, 1); // open
    await session(macs.online, 'Connected', at(30), 'Disconnected', at(29), 0);
    await session(macs.down, '<missing event>', null, 'Disconnected', at(4), 0); // missing connection
    await session(macs.fresh, 'Connected', at(10), '', null, 0); // missing disconnection
    await session(macs.down, 'Connected', at(24 * 40), 'Disconnected', at(24 * 39), 0); // outside 7 days
    // Seen by the server (at once on SQLite; through NOTIFY on PostgreSQL): every session counted.
    for (const [mac, sessions] of [
      [macs.online, 2],
      [macs.down, 2],
      [macs.fresh, 1],
    ] as const)
      await db.until(
        async () => (await server.request('GET', `/device/${mac}?period=all`)).json.devSessions === sessions,
        `the history of ${mac}`,
      );
  } finally {
    await db.close();
  }
}

onEachStore('NetAlertX endpoints', (_store, start) => {
  let server: InProcessServer;

  before(async () => {
    // IMPORT_BODY_LIMIT small here, to reach it cheaply (the 64 MiB default: import-big.test.ts).
    server = await start({
      CORS_ORIGINS: 'http://homer.lan:8080,https://dash.example',
      IMPORT_BODY_LIMIT: '100000',
    });
    await seed(server);
  });
  after(async () => {
    await server.stop();
  });

  test('GET /devices/by-status: NetAlertX shape and the conditions of each group', async () => {
    const ids = async (status?: string): Promise<string[]> => {
      const res = await server.request(
        'GET',
        `/devices/by-status${status === undefined ? '' : `?status=${status}`}`,
      );
      assert.equal(res.status, 200, res.text);
      return (res.body as Json[]).map((item) => String(item.id));
    };
    const all = (await server.request('GET', '/devices/by-status')).body as Json[];
    assert.deepEqual(all[1], { id: macs.favourite, title: 'Phone', favorite: 1 });
    assert.deepEqual(await ids(), Object.values(macs).sort());
    assert.deepEqual(await ids('all'), Object.values(macs).sort());
    assert.deepEqual(await ids('my'), [macs.online, macs.favourite, macs.fresh, macs.down, macs.offline]);
    assert.deepEqual(await ids('connected'), [macs.online, macs.favourite]);
    assert.deepEqual(await ids('favorites'), [macs.favourite]);
    assert.deepEqual(await ids('new'), [macs.fresh]);
    assert.deepEqual(await ids('down'), [macs.down]);
    assert.deepEqual(await ids('archived'), [macs.archived]);
    // NetAlertX 2026's presence names: not archived, present / absent in the last scan.
    assert.deepEqual(await ids('online'), [macs.online, macs.favourite]);
    assert.deepEqual(await ids('offline'), [macs.fresh, macs.down, macs.offline]);
    const posted = async (body?: Json): Promise<string[]> => {
      const res = await server.request('POST', '/devices/by-status', body === undefined ? {} : { body });
      assert.equal(res.status, 200, res.text);
      return (res.body as Json[]).map((item) => String(item.id));
    };
    assert.deepEqual(await posted({ status: 'offline' }), await ids('offline'));
    assert.deepEqual(await posted(), Object.values(macs).sort());
    const badPost = await server.request('POST', '/devices/by-status', { body: { status: 'On-line' } });
    assert.deepEqual([badPost.status, badPost.json.code], [400, 'INVALID_STATUS'], badPost.text);
    const bad = await server.request('GET', '/devices/by-status?status=On-line');
    assert.equal(bad.status, 400);
    assert.match(
      String(bad.json.message),
      /status must be one of: my, connected, favorites, new, down, archived, online, offline, all/,
    );
  });

  test('GET /devices/export: quoted CSV attachment with the stored columns, formula-guarded', async () => {
    for (const path of ['/devices/export', '/devices/export/csv', '/devices/export?format=csv']) {
      const res = await server.request('GET', path);
      assert.equal(res.status, 200, path);
      assert.match(String(res.headers.get('content-type')), /^text\/csv/);
      assert.equal(res.headers.get('content-disposition'), 'attachment; filename=devices.csv');
      const lines = res.text.split('\r\n');
      assert.equal(lines[0], storedFields.map((f) => `"${f.name}"`).join(','));
      assert.equal(lines.filter((l) => l.startsWith('"aa:')).length, 6);
      assert.ok(res.text.includes(`"'=HYPERLINK(""http://evil"")"`), 'formula guarded, quotes doubled');
      assert.ok(res.text.includes('"line one\nline two"'));
    }
    const json = await server.request('GET', '/devices/export/json');
    assert.equal(json.status, 200);
    assert.deepEqual(
      json.json.columns,
      storedFields.map((f) => f.name),
    );
    const data = json.json.data as Json[];
    assert.equal(data.length, 6);
    assert.equal(data[2]?.devName, '=HYPERLINK("http://evil")', 'JSON is not guarded');
    assert.equal((await server.request('GET', '/devices/export?format=xml')).status, 400);
    assert.equal((await server.request('GET', '/devices/export/xml')).status, 400);
  });

  test('POST /devices/import: the export imports back unchanged; upsert never wipes', async () => {
    const exported = (await server.request('GET', '/devices/export')).text;
    const before = (await server.request('GET', '/devices/export/json')).json.data;
    const content = Buffer.from(exported).toString('base64');
    const res = await server.request('POST', '/devices/import', { body: { content } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.inserted, 0);
    assert.equal(res.json.updated, 6);
    assert.deepEqual(res.json.skipped_lines, []);
    assert.deepEqual((await server.request('GET', '/devices/export/json')).json.data, before);

    // A CSV with one new device, one change, a bad MAC, a short row and an unknown column.
    const csv = [
      '"devMac","devName","devFavorite","devFirstConnection","devGUID","bogus"',
      '"AA-00-00-00-00-07","Printer","1","2024-05-01 10:00:00","11111111-2222-4333-8444-555555555555","x"',
      `"${macs.online}","Edge router","0","","",""`,
      '"Internet","Internet","0","","",""',
      '"aa:00:00:00:00:08","short"',
      '"aa:00:00:00:00:09","Flag","maybe","","",""',
    ].join('\r\n');
    const second = await server.request('POST', '/devices/import', {
      body: { content: Buffer.from(csv).toString('base64') },
    });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.json.inserted, 2);
    assert.equal(second.json.updated, 1);
    assert.deepEqual(second.json.skipped_lines, [3, 4]);
    assert.deepEqual(second.json.ignored_columns, ['bogus']);
    assert.match(JSON.stringify(second.json.notes), /devFavorite 'maybe' refused/);
    const printer = (await server.request('GET', '/device/aa:00:00:00:00:07')).json;
    assert.equal(printer.devName, 'Printer');
    assert.equal(printer.devFavorite, 1);
    assert.equal(printer.devFirstConnection, '2024-05-01T10:00:00Z');
    assert.equal(printer.devGUID, '11111111-2222-4333-8444-555555555555');
    const router = (await server.request('GET', `/device/${macs.online}`)).json;
    assert.equal(router.devName, 'Edge router');
    assert.equal(router.devPresentLastScan, 1, 'columns not in the CSV are kept');
    const list = (await server.request('GET', '/devices')).json;
    assert.equal(list.total, 8, 'nothing was wiped');
  });

  test('POST /devices/import: multipart file part, and hostile bodies change nothing', async () => {
    const boundary = '----netkeep-test-boundary';
    const csv = '"devMac","devName"\r\n"aa:00:00:00:00:0a","Uploaded"\r\n';
    const multipart =
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="devices.csv"\r\n` +
      `Content-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`;
    const res = await server.request('POST', '/devices/import', {
      rawBody: multipart,
      contentType: `multipart/form-data; boundary=${boundary}`,
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.inserted, 1);
    assert.equal((await server.request('GET', '/device/aa:00:00:00:00:0a')).json.devName, 'Uploaded');

    const before = (await server.request('GET', '/devices/export/json')).text;
    const hostile: Array<[unknown, RegExp]> = [
      [{ content: 'not base64!' }, /not base64/],
      [{ content: Buffer.from('"devName"\r\n"x"').toString('base64') }, /no devMac column/],
      [{ content: Buffer.from('"devMac"\r\n"aa:00:00:00:00:0b').toString('base64') }, /never closed/],
      [{ content: Buffer.from([0xff, 0xfe, 0x00]).toString('base64') }, /not UTF-8/],
      [{ content: 'YQ==', extra: 1 }, /unknown field 'extra'/],
      [[1, 2], /content/],
    ];
    for (const [body, message] of hostile) {
      const bad = await server.request('POST', '/devices/import', { body });
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.match(String(bad.json.message), message);
    }
    // Over BODY_LIMIT (65536) but within IMPORT_BODY_LIMIT: read, and refused for what it holds.
    const overBodyLimit = await server.request('POST', '/devices/import', {
      body: { content: Buffer.alloc(60_000, 'a').toString('base64') },
    });
    assert.deepEqual([overBodyLimit.status, overBodyLimit.json.code], [400, 'IMPORT_CSV_INVALID']);
    assert.match(String(overBodyLimit.json.message), /header \(line 0\) has no devMac column/);
    const big = await server.request('POST', '/devices/import', {
      body: { content: Buffer.alloc(120_000, 'a').toString('base64') },
    });
    assert.equal(big.status, 413);
    assert.match(String(big.json.message), /limit of 100000 bytes \(IMPORT_BODY_LIMIT\)/);
    const bigMultipart = await server.request('POST', '/devices/import', {
      rawBody: `--${boundary}\r\n${'x'.repeat(120_000)}`,
      contentType: `multipart/form-data; boundary=${boundary}`,
    });
    assert.equal(bigMultipart.status, 413);
    const otherType = await server.request('POST', '/devices/import', {
      rawBody: csv,
      contentType: 'text/csv',
    });
    assert.equal(otherType.status, 415);
    // Every other route keeps BODY_LIMIT.
    const otherRoute = await server.request('POST', '/devices/by-status', {
      body: { status: 'x'.repeat(70_000) },
    });
    assert.equal(otherRoute.status, 413);
    const noAuth = await server.request('POST', '/devices/import', {
      body: { content: 'YQ==' },
      token: null,
    });
    assert.equal(noAuth.status, 403);
    assert.equal((await server.request('GET', '/devices/export/json')).text, before);
  });

  test('GET /events?mac=: eve_* rows, newest first', async () => {
    const res = await server.request('GET', `/events?mac=${macs.online.toUpperCase().replace(/:/g, '-')}`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.success, true);
    const events = res.json.events as Json[];
    assert.equal(res.json.count, 3, 'count, as newer NetAlertX releases add it');
    assert.deepEqual(
      events.map((e) => e.eve_EventType),
      ['Connected', 'New Device', 'IP Changed'],
    );
    assert.deepEqual(Object.keys(events[0] ?? {}).sort(), [
      'eve_AdditionalInfo',
      'eve_DateTime',
      'eve_EventType',
      'eve_IP',
      'eve_MAC',
      'eve_PairEventRowid',
      'eve_PendingAlertEmail',
    ]);
    assert.equal((await server.request('GET', '/events')).json.events instanceof Array, true);
    assert.equal(((await server.request('GET', '/events')).json.events as Json[]).length, 6);
    assert.equal((await server.request('GET', '/events?mac=nope')).status, 400);
    assert.deepEqual((await server.request('GET', '/events?mac=aa:00:00:00:00:99')).json, {
      success: true,
      events: [],
      count: 0,
    });
  });

  test('GET /sessions/totals: [events, sessions, missing, voided, new, down] by NetAlertX conditions', async () => {
    const totals = async (query: string): Promise<unknown> =>
      (await server.request('GET', `/sessions/totals${query}`)).body;
    assert.deepEqual(await totals(''), [5, 4, 2, 1, 1, 1]);
    assert.deepEqual(await totals('?period=7%20days'), [5, 4, 2, 1, 1, 1]);
    assert.deepEqual(await totals('?period=all'), [6, 5, 2, 1, 1, 2]);
    assert.deepEqual(await totals('?period=100%20years'), [6, 5, 2, 1, 1, 2]);
    assert.equal((await server.request('GET', '/sessions/totals?period=2%20days')).status, 400);
  });

  test('GET /php/server/devices.php?action=getDevicesTotals: the totals array of older NetAlertX', async () => {
    const res = await server.request('GET', '/php/server/devices.php?action=getDevicesTotals');
    assert.equal(res.status, 200, res.text);
    // my, connected, favorites, new, down, archived (the import test adds two more devices later)
    const totals = res.body as number[];
    assert.equal(totals.length, 6);
    assert.ok(totals.every((n) => Number.isInteger(n)));
    assert.equal(totals[5], 1, 'one archived');
    assert.equal((await server.request('GET', '/php/server/devices.php?action=getDevices')).status, 404);
  });

  test('CORS: preflight without a token for listed origins only; headers on answers', async () => {
    const preflight = (origin: string) =>
      server.request('OPTIONS', '/devices/totals', {
        token: null,
        headers: {
          origin,
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      });
    const ok = await preflight('http://homer.lan:8080');
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('access-control-allow-origin'), 'http://homer.lan:8080');
    assert.match(String(ok.headers.get('access-control-allow-headers')), /Authorization/i);
    const refused = await preflight('http://evil.lan');
    assert.equal(refused.headers.get('access-control-allow-origin'), null);

    const get = await server.request('GET', '/devices/by-status', {
      headers: { origin: 'https://dash.example' },
    });
    assert.equal(get.status, 200);
    assert.equal(get.headers.get('access-control-allow-origin'), 'https://dash.example');
    const noToken = await server.request('GET', '/devices/by-status', {
      token: null,
      headers: { origin: 'https://dash.example' },
    });
    assert.equal(noToken.status, 403);
    assert.equal(noToken.headers.get('access-control-allow-origin'), 'https://dash.example');
    const other = await server.request('GET', '/devices/by-status', {
      headers: { origin: 'http://evil.lan' },
    });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  test('deliberately absent: 403 without a token, then 404 naming why; no token in the query string', async () => {
    for (const path of ['/dbquery/read', '/dbquery', '/settings/API_TOKEN', '/sync']) {
      const anonymous = await server.request('POST', path, { token: null });
      assert.equal(anonymous.status, 403, path);
      assert.deepEqual(anonymous.json, notAuthorizedBody);
      const res = await server.request('GET', path);
      assert.equal(res.status, 404, path);
      assert.match(String(res.json.message), /does not offer.*docs\/netalertx\.md/);
    }
    // A token in the query string is never read: 403, saying why (the right token or a wrong one).
    for (const token of [server.token, 'wrong']) {
      const queryToken = await server.request('GET', `/devices/by-status?status=all&token=${token}`, {
        token: null,
      });
      assert.equal(queryToken.status, 403);
      assert.equal(queryToken.json.code, 'TOKEN_IN_QUERY');
      assert.match(
        String(queryToken.json.message),
        /does not read a token from the query string.*Authorization: Bearer/,
      );
    }
  });
});

describe('CORS off by default', () => {
  test('no CORS headers and no unauthenticated preflight', async () => {
    const server = await TestServer.start();
    try {
      const res = await server.request('OPTIONS', '/devices', {
        token: null,
        headers: { origin: 'http://homer.lan:8080', 'access-control-request-method': 'GET' },
      });
      assert.equal(res.status, 403);
      assert.equal(res.headers.get('access-control-allow-origin'), null);
    } finally {
      await server.stop();
    }
  });

  test('a bad CORS_ORIGINS entry and API_TOKEN= (set, empty) refuse to start with exit 2', async () => {
    const envs: Record<string, string>[] = [
      { CORS_ORIGINS: '*' },
      { CORS_ORIGINS: 'http://homer.lan/path' },
      { API_TOKEN: '' },
    ];
    for (const env of envs) {
      await assert.rejects(TestServer.start({ env }), (err: Error) => {
        assert.match(err.message, /exited with 2/);
        assert.match(err.message, /configuration error: (CORS_ORIGINS|API_TOKEN is set but empty)/);
        return true;
      });
    }
  });
});

onEachStore('CSV export and import: the formula guard round-trips', (store, start) => {
  let server: InProcessServer;
  before(async () => {
    server = await start();
  });
  after(async () => {
    await server.stop();
  });

  test("names starting with = + - @ ' tab or CR come back exactly as they were", async () => {
    const names = [
      "'=1+1",
      '=1+1',
      '+1',
      '-1',
      '@SUM(A1)',
      '\tTab',
      '\rCR',
      "'",
      "''=x",
      "'plain",
      "'\ttab",
      'plain',
    ];
    const mac = (i: number) => `ab:00:00:00:00:${String(i).padStart(2, '0')}`;
    for (const [i, devName] of names.entries()) {
      const res = await server.request('POST', `/device/${mac(i)}`, { body: { createNew: true, devName } });
      assert.equal(res.status, 200, res.text);
    }
    const exported = (await server.request('GET', '/devices/export')).text;
    // Every exported cell is safe to open in a spreadsheet: none starts with a formula character.
    assert.doesNotMatch(exported, /(^|,)"[=+\-@\t\r]/m);
    const res = await server.request('POST', '/devices/import', {
      body: { content: Buffer.from(exported).toString('base64') },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.skipped_lines, []);
    for (const [i, devName] of names.entries()) {
      const device = await server.request('GET', `/device/${mac(i)}`);
      assert.equal(device.json.devName, devName, JSON.stringify(devName));
    }
  });

  test('a NUL character (U+0000) in a cell: kept on SQLite; on PostgreSQL a 400 and nothing changes', async () => {
    const mac = 'ab:00:00:00:01:00';
    const created = await server.request('POST', `/device/${mac}`, {
      body: { createNew: true, devName: 'before' },
    });
    assert.equal(created.status, 200, created.text);
    const exported = (await server.request('GET', '/devices/export')).text;
    assert.ok(exported.includes('"before"'));
    const content = Buffer.from(exported.replace('"before"', '"a\u0000b"')).toString('base64');
    const res = await server.request('POST', '/devices/import', { body: { content } });
    const device = (await server.request('GET', `/device/${mac}`)).json;
    if (store === 'SQLite') {
      assert.equal(res.status, 200, res.text);
      assert.equal(device.devName, 'a\u0000b');
    } else {
      // PostgreSQL's text cannot hold it (docs/postgresql.md): the whole import is refused.
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.code, 'NUL_CHARACTER');
      assert.match(String(res.json.message), new RegExp(`'devName' of ${mac} holds the NUL character`));
      assert.equal(device.devName, 'before');
    }
  });
});
