/**
 * devParentMAC may not make the network tree loop: a device under itself or under its own
 * descendant. On both stores (test/helpers/stores.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InProcessServer } from '../helpers/inject.js';
import { onEachStore } from '../helpers/stores.js';

const router = '02:aa:00:00:00:01';
const sw = '02:aa:00:00:00:02';
const ap = '02:aa:00:00:00:03';

onEachStore('parent cycles are refused', (_store, start) => {
  let server: InProcessServer;
  before(async () => {
    server = await start();
    for (const [mac, parent] of [
      [router, ''],
      [sw, router],
      [ap, sw],
    ] as const) {
      const res = await server.request('POST', `/device/${mac}`, {
        body: { createNew: true, devName: mac, devParentMAC: parent },
      });
      assert.equal(res.status, 200, res.text);
    }
  });
  after(async () => {
    await server.stop();
  });

  const parentOf = async (mac: string) => (await server.request('GET', `/device/${mac}`)).json.devParentMAC;

  test('a device under its own grandchild: 400 PARENT_CYCLE, nothing changes', async () => {
    const res = await server.request('POST', `/device/${router}`, {
      body: { devParentMAC: ap, devName: 'x' },
    });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'PARENT_CYCLE');
    assert.match(String(res.json.message), /would make a loop/);
    assert.equal(await parentOf(router), '');
    assert.equal((await server.request('GET', `/device/${router}`)).json.devName, router);
  });

  test('a device under itself, also through update-column and another MAC spelling', async () => {
    const self = await server.request('POST', `/device/${sw}`, {
      body: { devParentMAC: sw.toUpperCase() },
    });
    assert.equal(self.status, 400);
    assert.equal(self.json.code, 'PARENT_CYCLE');
    const column = await server.request('POST', `/device/${sw}/update-column`, {
      body: { columnName: 'devParentMAC', columnValue: ap },
    });
    assert.equal(column.status, 400, column.text);
    assert.equal(column.json.code, 'PARENT_CYCLE');
    assert.equal(await parentOf(sw), router);
  });

  test('moving a device elsewhere in the tree is allowed', async () => {
    const res = await server.request('POST', `/device/${ap}`, { body: { devParentMAC: router } });
    assert.equal(res.status, 200, res.text);
    assert.equal(await parentOf(ap), router);
    const back = await server.request('POST', `/device/${router}`, { body: { devParentMAC: '' } });
    assert.equal(back.status, 200);
  });
});
