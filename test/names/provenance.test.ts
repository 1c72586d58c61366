/**
 * devNameSource (DESIGN 11): every API write of devName makes it a user name, writing no name
 * clears the source, and automatic names never replace a user or import name. The rules as a
 * table, then through the real app and its SQLite file.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { decideName } from '../../src/names/rules.js';
import { migrate, migrations } from '../../src/store/sqlite/migrations.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import type { NameCandidate } from '../../src/names/types.js';
import { InProcessServer } from '../helpers/inject.js';

const c = (source: NameCandidate['source'], name: string): NameCandidate => ({ source, name });

describe('decideName: the provenance rules', () => {
  const cases: {
    stored: [string, string];
    candidates: NameCandidate[];
    expected: NameCandidate | undefined;
  }[] = [
    // user and import names are never replaced
    { stored: ['Anna phone', 'user'], candidates: [c('dhcp', 'android-1')], expected: undefined },
    { stored: ['Router', 'import'], candidates: [c('dhcp', 'openwrt')], expected: undefined },
    // no name yet: the best-ranked candidate
    {
      stored: ['(unknown)', ''],
      candidates: [c('dns', 'nas'), c('netbios', 'NAS'), c('mdns', 'nas-m'), c('dhcp', 'nas-d')],
      expected: c('dhcp', 'nas-d'),
    },
    {
      stored: ['(unknown)', ''],
      candidates: [c('dns', 'nas'), c('netbios', 'NAS')],
      expected: c('netbios', 'NAS'),
    },
    { stored: ['(unknown)', ''], candidates: [], expected: undefined },
    // a better-ranked source replaces a worse one; never the other way round
    { stored: ['nas', 'dns'], candidates: [c('mdns', 'nas-m')], expected: c('mdns', 'nas-m') },
    { stored: ['nas-d', 'dhcp'], candidates: [c('mdns', 'nas-m'), c('dns', 'x')], expected: undefined },
    // a source's newer name replaces its own older one; the same name is no change
    { stored: ['nas-d', 'dhcp'], candidates: [c('dhcp', 'nas-2')], expected: c('dhcp', 'nas-2') },
    { stored: ['nas-d', 'dhcp'], candidates: [c('dhcp', 'nas-d')], expected: undefined },
    // empty candidates never name
    { stored: ['(unknown)', ''], candidates: [c('dhcp', ''), c('dns', 'h')], expected: c('dns', 'h') },
    // a source netkeep does not know (a row written by another program) counts as no source
    { stored: ['x', 'sqlite3-cli'], candidates: [c('dns', 'h')], expected: c('dns', 'h') },
  ];
  for (const { stored, candidates, expected } of cases)
    test(`${stored.join('/')} + [${candidates.map((x) => `${x.source}:${x.name}`).join(', ')}]`, () => {
      assert.deepEqual(decideName({ name: stored[0], source: stored[1] }, candidates), expected);
    });
});

describe('API writes of devName set devNameSource', () => {
  let server: InProcessServer;
  before(async () => {
    server = await InProcessServer.start();
  });
  after(async () => {
    await server.stop();
  });
  const source = async (mac: string): Promise<unknown> =>
    (await server.request('GET', `/device/${mac}`)).json.devNameSource;
  const post = async (mac: string, body: Record<string, unknown>): Promise<void> => {
    const res = await server.request('POST', `/device/${mac}`, { body });
    assert.equal(res.status, 200, res.text);
  };

  test('create, POST, update-column, copy; "" and (unknown) clear it; other fields leave it', async () => {
    await post('02:00:00:00:01:01', { createNew: true });
    assert.equal(await source('02:00:00:00:01:01'), '');
    await post('02:00:00:00:01:02', { createNew: true, devName: 'Printer' });
    assert.equal(await source('02:00:00:00:01:02'), 'user');
    await post('02:00:00:00:01:01', { devName: 'Laptop', devOwner: 'Anna' });
    assert.equal(await source('02:00:00:00:01:01'), 'user');
    await post('02:00:00:00:01:01', { devName: '' });
    assert.equal(await source('02:00:00:00:01:01'), '');
    let res = await server.request('POST', '/device/02:00:00:00:01:01/update-column', {
      body: { columnName: 'devName', columnValue: 'Laptop 2' },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(await source('02:00:00:00:01:01'), 'user');
    res = await server.request('POST', '/device/02:00:00:00:01:01/update-column', {
      body: { columnName: 'devName', columnValue: '(unknown)' },
    });
    assert.equal(await source('02:00:00:00:01:01'), '');
    await post('02:00:00:00:01:01', { devOwner: 'Bob' });
    assert.equal(await source('02:00:00:00:01:01'), '', 'a write without devName leaves the source');

    // copy from a device named automatically: the target's name is the user's.
    const db = new Database(join(server.dataDir, 'netkeep.db'));
    try {
      db.prepare(`UPDATE Devices SET devName = 'nas', devNameSource = 'dhcp' WHERE devMac = ?`).run(
        '02:00:00:00:01:01',
      );
    } finally {
      db.close();
    }
    res = await server.request('POST', '/device/copy', {
      body: { macFrom: '02:00:00:00:01:01', macTo: '02:00:00:00:01:03' },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(await source('02:00:00:00:01:03'), 'user');
    assert.equal(await source('02:00:00:00:01:01'), 'dhcp', 'the source device is untouched');
  });

  test('devNameSource is read-only: echoed back it is ignored, update-column refuses it', async () => {
    await post('02:00:00:00:02:01', { createNew: true, devName: 'TV' });
    const device = (await server.request('GET', '/device/02:00:00:00:02:01')).json;
    await post('02:00:00:00:02:01', { ...device, devNameSource: 'dns', devName: 'TV' });
    assert.equal(await source('02:00:00:00:02:01'), 'user');
    const res = await server.request('POST', '/device/02:00:00:00:02:01/update-column', {
      body: { columnName: 'devNameSource', columnValue: 'dhcp' },
    });
    assert.equal(res.status, 400);
    assert.equal(await source('02:00:00:00:02:01'), 'user');
  });

  test("a CSV import naming a device makes its name the user's", async () => {
    const csv = '"devMac","devName"\r\n"02:00:00:00:03:01","Uploaded"\r\n"02:00:00:00:03:02",""\r\n';
    const res = await server.request('POST', '/devices/import', {
      body: { content: Buffer.from(csv).toString('base64') },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(await source('02:00:00:00:03:01'), 'user');
    assert.equal(await source('02:00:00:00:03:02'), '');
  });

  test('the store never writes an automatic name over a user or import name', () => {
    const db = new Database(join(server.dataDir, 'netkeep.db'));
    try {
      const repository = new SqliteDevices(db);
      db.prepare(
        `UPDATE Devices SET devName = 'Imported', devNameSource = 'import' WHERE devMac = '02:00:00:00:03:02'`,
      ).run();
      for (const mac of ['02:00:00:00:02:01', '02:00:00:00:03:02'])
        assert.equal(repository.setName({ mac, name: 'android-x', source: 'dhcp', fqdn: null }), false);
      assert.equal(repository.getName('02:00:00:00:02:01')?.name, 'TV');
      assert.equal(repository.getName('02:00:00:00:03:02')?.name, 'Imported');
      // devFQDN alone may follow DNS for any device.
      assert.equal(
        repository.setName({ mac: '02:00:00:00:02:01', name: null, source: null, fqdn: 'tv.home.lan' }),
        true,
      );
      assert.deepEqual(repository.getName('02:00:00:00:02:01'), {
        name: 'TV',
        source: 'user',
        fqdn: 'tv.home.lan',
        ip: '',
      });
    } finally {
      db.close();
    }
  });
});

test('the migration protects every name stored before it as a user name', () => {
  const db = new Database(':memory:');
  try {
    const before = migrations.findIndex((m) => m.description.startsWith('devNameSource'));
    for (const migration of migrations.slice(0, before)) migration.up(db);
    db.pragma(`user_version = ${before}`);
    const insert = db.prepare('INSERT INTO Devices (devMac, devName) VALUES (?, ?)');
    insert.run('02:00:00:00:09:01', 'Living room TV');
    insert.run('02:00:00:00:09:02', '(unknown)');
    insert.run('02:00:00:00:09:03', '');
    migrate(db);
    assert.deepEqual(db.prepare('SELECT devMac, devNameSource FROM Devices ORDER BY devMac').all(), [
      { devMac: '02:00:00:00:09:01', devNameSource: 'user' },
      { devMac: '02:00:00:00:09:02', devNameSource: '' },
      { devMac: '02:00:00:00:09:03', devNameSource: '' },
    ]);
  } finally {
    db.close();
  }
});
