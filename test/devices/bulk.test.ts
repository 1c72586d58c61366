/**
 * POST /devices/bulk: the same fields on many devices, or their deletion, in one write; a stale
 * selection (devices deleted meanwhile) reports which MACs failed and changes the rest; bad values
 * are the single edit's 400s and change nothing. On both stores (test/helpers/stores.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InProcessServer } from '../helpers/inject.js';
import { onEachStore } from '../helpers/stores.js';

const mac = (n: number) => `02:bb:00:00:00:${n.toString(16).padStart(2, '0')}`;

onEachStore('POST /devices/bulk', (_store, start) => {
  let server: InProcessServer;
  before(async () => {
    server = await start();
    for (let n = 1; n <= 8; n++) {
      const res = await server.request('POST', `/device/${mac(n)}`, {
        body: { createNew: true, devName: `host${String(n)}`, devGroup: 'Old' },
      });
      assert.equal(res.status, 200, res.text);
    }
  });
  after(async () => {
    await server.stop();
  });

  const device = async (m: string) => (await server.request('GET', `/device/${m}`)).json;
  const bulk = (body: unknown) => server.request('POST', '/devices/bulk', { body });

  test('sets the fields on every device; a deleted one is reported, the rest change', async () => {
    const gone = mac(7);
    assert.equal((await server.request('DELETE', `/device/${gone}/delete`)).status, 200);
    const res = await bulk({
      macs: [mac(1), mac(2).toUpperCase(), gone, mac(3)],
      set: { devGroup: 'Lab', devOwner: 'Ann', devFavorite: true, devAlertDown: 1 },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.changed, [mac(1), mac(2), mac(3)]);
    assert.deepEqual(res.json.failed, [
      { mac: gone, code: 'DEVICE_NOT_FOUND', message: `Device ${gone} not found.` },
    ]);
    for (const n of [1, 2, 3]) {
      const d = await device(mac(n));
      assert.equal(d.devGroup, 'Lab');
      assert.equal(d.devOwner, 'Ann');
      assert.equal(d.devFavorite, 1);
      assert.equal(d.devAlertDown, 1);
      assert.equal(d.devName, `host${String(n)}`, 'fields not given stay');
    }
    assert.equal((await device(mac(4))).devGroup, 'Old');
    // The list (served from its cache) sees the change too.
    const list = await server.request('GET', '/devices?q=host&sort=devMac');
    const groups = (list.json.devices as { devMac: string; devGroup: string }[]).map((d) => d.devGroup);
    assert.deepEqual(groups, ['Lab', 'Lab', 'Lab', 'Old', 'Old', 'Old', 'Old']);
  });

  test('bad values are the single edit 400s and change nothing', async () => {
    const cases: [unknown, string][] = [
      [{ macs: [mac(4)], set: { devFavorite: 2 } }, 'FST_ERR_VALIDATION'],
      [{ macs: [mac(4)], set: { devName: 'one name for all' } }, 'FST_ERR_VALIDATION'],
      [{ macs: [mac(4)], set: {} }, 'FST_ERR_VALIDATION'],
      [{ macs: [], set: { devGroup: 'x' } }, 'FST_ERR_VALIDATION'],
      [{ macs: ['not-a-mac'], set: { devGroup: 'x' } }, 'FST_ERR_VALIDATION'],
      [{ macs: [mac(4)] }, 'BULK_EDIT_SHAPE'],
      [{ macs: [mac(4)], set: { devGroup: 'x' }, delete: true }, 'BULK_EDIT_SHAPE'],
    ];
    for (const [body, code] of cases) {
      const res = await bulk(body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      if (code !== 'FST_ERR_VALIDATION') assert.equal(res.json.code, code);
    }
    const d = await device(mac(4));
    assert.equal(d.devGroup, 'Old');
    assert.equal(d.devFavorite, 0);
  });

  test('a parent that would loop fails for that device only', async () => {
    const res = await bulk({ macs: [mac(4), mac(5), mac(6)], set: { devParentMAC: mac(5) } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.changed, [mac(4), mac(6)]);
    const failed = res.json.failed as { mac: string; code: string }[];
    assert.deepEqual(
      failed.map((f) => [f.mac, f.code]),
      [[mac(5), 'PARENT_CYCLE']],
    );
    assert.equal((await device(mac(4))).devParentMAC, mac(5));
    assert.equal((await device(mac(5))).devParentMAC, '');
  });

  test('a selection of 10,000 devices fits (above BODY_LIMIT); the ones that are no devices are reported', async () => {
    const macs = Array.from(
      { length: 10_000 },
      (_, i) =>
        `02:bc:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
    );
    macs[0] = mac(6);
    const res = await bulk({ macs, set: { devLocation: 'Attic' } });
    assert.equal(res.status, 200, res.text.slice(0, 200));
    assert.deepEqual(res.json.changed, [mac(6)]);
    assert.equal((res.json.failed as unknown[]).length, 9_999);
    assert.equal((await device(mac(6))).devLocation, 'Attic');
    const tooMany = await bulk({ macs: [...macs, mac(1)], set: { devLocation: 'x' } });
    assert.equal(tooMany.status, 400);
  });

  test('delete: the devices go, a stale one is reported, children are detached', async () => {
    const res = await bulk({ macs: [mac(5), mac(8), mac(7)], delete: true });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.changed, [mac(5), mac(8)]);
    assert.deepEqual(
      (res.json.failed as { mac: string }[]).map((f) => f.mac),
      [mac(7)],
    );
    assert.equal((await server.request('GET', `/device/${mac(5)}`)).status, 404);
    assert.equal((await server.request('GET', `/device/${mac(8)}`)).status, 404);
    assert.equal((await device(mac(4))).devParentMAC, '', 'the child of a deleted device is detached');
    const totals = await server.request('GET', '/devices/totals/named');
    assert.equal((totals.json.totals as Record<string, number>).devices, 5);
  });
});
