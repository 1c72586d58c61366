/**
 * GET /devices?sort=devName: natural order ("host2" before "host10"), case ignored, and devices
 * without a name ('' or '(unknown)') after the named ones in either direction; pages of the list
 * are slices of that one order. On both stores (test/helpers/stores.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { naturalKey } from '../../src/devices/list-query.js';
import type { InProcessServer } from '../helpers/inject.js';
import { onEachStore } from '../helpers/stores.js';

const names = [
  'host10',
  'Printer 1069',
  '',
  'host2',
  'Printer 164',
  '(unknown)',
  'Host1',
  'host02b',
  'Ähnlich',
];
const mac = (i: number) => `02:dd:00:00:00:${(i + 1).toString(16).padStart(2, '0')}`;

onEachStore('the name sort', (_store, start) => {
  let server: InProcessServer;
  before(async () => {
    server = await start();
    for (const [i, devName] of names.entries()) {
      const res = await server.request('POST', `/device/${mac(i)}`, { body: { createNew: true, devName } });
      assert.equal(res.status, 200, res.text);
    }
  });
  after(async () => {
    await server.stop();
  });

  const listed = async (query: string) => {
    const res = await server.request('GET', `/devices?sort=devName&${query}`);
    assert.equal(res.status, 200, res.text);
    return (res.json.devices as { devName: string; devMac: string }[]).map((d) => d.devName || d.devMac);
  };

  test('ascending: numbers in names compare as numbers, unnamed devices last', async () => {
    assert.deepEqual(await listed('order=asc'), [
      'Host1',
      'host2',
      'host02b',
      'host10',
      'Printer 164',
      'Printer 1069',
      'Ähnlich',
      mac(2),
      '(unknown)',
    ]);
  });

  test('descending: the named ones reversed, unnamed devices still last', async () => {
    assert.deepEqual(await listed('order=desc'), [
      'Ähnlich',
      'Printer 1069',
      'Printer 164',
      'host10',
      'host02b',
      'host2',
      'Host1',
      '(unknown)',
      mac(2),
    ]);
  });

  test('pages are slices of the same order', async () => {
    const whole = await listed('order=asc');
    const pages = [
      ...(await listed('limit=4&offset=0')),
      ...(await listed('limit=4&offset=4')),
      ...(await listed('limit=4&offset=8')),
    ];
    assert.deepEqual(pages, whole);
  });

  test('the key: digit runs by value, leading zeros ignored, long runs too', () => {
    assert.ok(naturalKey('host2') < naturalKey('host10'));
    assert.equal(naturalKey('host002'), naturalKey('host2'));
    assert.ok(naturalKey('a' + '9'.repeat(120)) < naturalKey('a1' + '0'.repeat(120)));
    assert.ok(naturalKey('Printer 164') < naturalKey('printer 1069'));
  });
});
