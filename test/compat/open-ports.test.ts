/**
 * NetAlertX's `POST /device/open_ports` `{target}` in process: the ports the port watch stored
 * (seeded through the watch store, as the port watch writes them) for a device named by any MAC
 * form, its IPv4 address or its IPv6 address; the same ports as GET /device/<mac>/ports. Unknown
 * targets and targets without stored ports are NetAlertX's 404; hostile values (option-like text,
 * shell text, huge strings, wrong JSON types) are 400s that change nothing. On both stores
 * (test/helpers/stores.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openStore } from '../../src/store/index.js';
import type { OpenPort } from '../../src/store/watch.js';
import { ipOrMacPattern } from '../../src/validation.js';
import type { InProcessServer } from '../helpers/inject.js';
import { openTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';

type Json = Record<string, unknown>;

const macs = {
  router: 'aa:00:00:00:00:01',
  /** Absent, kept the router's address from before: the present router is the one meant. */
  stale: 'aa:00:00:00:00:02',
  printer: 'aa:00:00:00:00:03',
  phone: 'aa:00:00:00:00:04',
} as const;

const port = (n: number, service: string, product = ''): OpenPort => ({
  port: n,
  protocol: 'tcp',
  service,
  product,
  version: '',
});

onEachStore('POST /device/open_ports', (_store, start) => {
  let app: InProcessServer;
  const open = (body: unknown) => app.request('POST', '/device/open_ports', { body });
  const storedRows = async (): Promise<unknown> => {
    const db = await openTables(app);
    try {
      return await db.value('SELECT COUNT(*) FROM "DevicePorts"');
    } finally {
      await db.close();
    }
  };

  before(async () => {
    app = await start();
    const devices: Record<string, Json> = {
      // The stale device first: the first row with the address is not the answer.
      [macs.stale]: { devName: 'Old box', devLastIP: '10.0.0.1', devPresentLastScan: 0 },
      [macs.router]: { devName: 'Router', devLastIP: '10.0.0.1', devPresentLastScan: 1 },
      [macs.printer]: { devName: 'Printer', devLastIP: '10.0.0.9', devPresentLastScan: 1 },
      [macs.phone]: { devName: 'Phone', devLastIP: '10.0.0.50', devPresentLastScan: 1 },
    };
    for (const [mac, fields] of Object.entries(devices)) {
      const res = await app.request('POST', `/device/${mac}`, { body: { createNew: true, ...fields } });
      assert.equal(res.status, 200, res.text);
    }
    // Another connection to the same store, as the scanner and the port watch write.
    const db = await openTables(app);
    const store = await openStore({ DATA_DIR: app.dataDir, DATABASE_URL: app.databaseUrl });
    try {
      // devPrimaryIPv6 is the scanner's (not editable): set as the scanner stores it, RFC 5952 text.
      await db.run('UPDATE "Devices" SET "devPrimaryIPv6" = ? WHERE "devMac" = ?', ['fd00::1', macs.router]);
      const at = new Date('2026-11-20T08:00:00Z');
      await store.watch.recordPortScans(
        [
          { mac: macs.router, ports: [port(22, 'ssh', 'OpenSSH'), port(80, 'http')] },
          { mac: macs.stale, ports: [port(23, 'telnet')] },
          { mac: macs.printer, ports: [] }, // scanned, nothing open
        ],
        at,
        () => ({ events: [] }),
      );
      // Seen by the server (at once on SQLite; through NOTIFY on PostgreSQL).
      await db.until(
        async () => (await open({ target: 'fd00::1' })).status === 200,
        'the stored ports and the IPv6 address',
      );
    } finally {
      await store.close();
      await db.close();
    }
  });
  after(async () => {
    await app.stop();
  });

  test('a device with stored ports: NetAlertX shape, the ports of GET /device/<mac>/ports', async () => {
    const rest = await app.request('GET', `/device/${macs.router}/ports`);
    assert.equal(rest.status, 200, rest.text);
    const expected = rest.json.ports as Json[];
    assert.deepEqual(
      expected.map((p) => [p.port, p.protocol, p.service, p.product]),
      [
        [22, 'tcp', 'ssh', 'OpenSSH'],
        [80, 'tcp', 'http', ''],
      ],
    );
    for (const target of [macs.router, 'AA-00-00-00-00-01', 'aa00.0000.0001', '10.0.0.1', 'FD00:0:0::1']) {
      const res = await open({ target });
      assert.equal(res.status, 200, `${target}: ${res.text}`);
      assert.deepEqual(
        res.json,
        {
          success: true,
          target,
          mac: macs.router,
          scannedAt: '2026-11-20T08:00:00Z',
          open_ports: expected,
        },
        target,
      );
    }
  });

  test("unknown targets and targets without stored ports are NetAlertX's 404", async () => {
    const cases: [string, string, RegExp][] = [
      ['aa:00:00:00:00:99', 'DEVICE_NOT_FOUND', /aa:00:00:00:00:99 not found/],
      ['10.9.9.9', 'DEVICE_NOT_FOUND', /No device has the address 10\.9\.9\.9/],
      ['fd00::99', 'DEVICE_NOT_FOUND', /No device has the address fd00::99/],
      ['10.0.0.50', 'NO_OPEN_PORTS', /has not scanned it/],
      [macs.printer, 'NO_OPEN_PORTS', /found none open at 2026-11-20T08:00:00Z/],
    ];
    for (const [target, code, message] of cases) {
      const res = await open({ target });
      assert.deepEqual([res.status, res.json.success, res.json.code], [404, false, code], target);
      assert.equal(typeof res.json.error, 'string');
      assert.match(String(res.json.message), message, target);
    }
  });

  test('hostile or malformed targets are 400s that change nothing', async () => {
    const before = await storedRows();
    const invalidTarget: unknown[] = [
      '--script=http-title',
      '-oX /tmp/owned',
      '-iL/etc/passwd',
      '10.0.0.1 -p-',
      '10.0.0.1; rm -rf /',
      '$(reboot)',
      '`id`',
      '10.0.0.1\n',
      ' 10.0.0.1',
      '10.0.0.1/24',
      '1.2.3',
      '010.0.0.1',
      '10.0.0.256',
      'aa:bb:cc',
      'aa:00:00:00:00:01:ff',
      '::ffff:10.0.0.1',
      'fe80::1%eth0',
      '１０.０.０.１',
      "' OR 1=1 --",
    ];
    for (const target of invalidTarget) {
      const res = await open({ target });
      assert.deepEqual(
        [res.status, res.json.code],
        [400, 'INVALID_TARGET'],
        `${String(target)}: ${res.text}`,
      );
    }
    const mapped = await open({ target: '::ffff:10.0.0.1' });
    assert.match(String(mapped.json.message), /give the IPv4 address \(10\.0\.0\.1\) instead/);
    const option = await open({ target: '--script=http-title' });
    assert.match(String(option.json.message), /must be an IP address or a MAC address/);

    const malformed: [unknown, RegExp][] = [
      [{}, /field 'target' is required|must have required property 'target'/],
      [{ target: '' }, /fewer than 1 characters/],
      [{ target: 'a'.repeat(65) }, /more than 64 characters/],
      [{ target: 'a'.repeat(60_000) }, /more than 64 characters/],
      [{ target: 5 }, /must be string/],
      [{ target: null }, /must be string/],
      [{ target: true }, /must be string/],
      [{ target: ['10.0.0.1'] }, /must be string/],
      [{ target: { ip: '10.0.0.1' } }, /must be string/],
      [{ target: '10.0.0.1', mode: 'detail' }, /unknown field 'mode'/],
      ['10.0.0.1', /./],
      [['10.0.0.1'], /./],
      [null, /./],
    ];
    for (const [body, message] of malformed) {
      const res = await open(body);
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.text}`);
      assert.match(String(res.json.message), message, JSON.stringify(body).slice(0, 80));
    }
    // A body of megabytes is refused before it is parsed (BODY_LIMIT).
    assert.equal((await open({ target: 'a'.repeat(2 * 1024 * 1024) })).status, 413);
    assert.equal(await storedRows(), before);
  });

  test("in the OpenAPI document, with the validator's pattern (so the MCP tool has it)", async () => {
    const spec = (await app.request('GET', '/openapi.json', { token: null })).json as {
      paths: Record<string, Record<string, Json>>;
    };
    const operation = spec.paths['/device/open_ports']?.post as {
      requestBody: { content: Record<string, { schema: { properties: Record<string, Json> } }> };
    };
    const target = operation.requestBody.content['application/json']?.schema.properties.target;
    assert.ok(target);
    assert.deepEqual([target.maxLength, target.pattern], [64, ipOrMacPattern]);
  });

  test('needs the token', async () => {
    const res = await app.request('POST', '/device/open_ports', {
      token: 'wrong-token',
      body: { target: macs.router },
    });
    assert.equal(res.status, 403);
  });
});
