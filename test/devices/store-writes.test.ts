/**
 * The API's device writes over HTTP, the same cases on both stores (test/helpers/stores.ts): create
 * (and 409 for a device that exists), update, update-column, copy, reset-props, events/delete,
 * delete (and 404 after it), the parent-loop rule, and the device's history lists. Each answer is
 * checked through the API only, so the PostgreSQL run asks nothing of SQLite's file.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InProcessServer } from '../helpers/inject.js';
import { onEachStore } from '../helpers/stores.js';

onEachStore('device writes over HTTP', (_store, start) => {
  let server: InProcessServer;
  before(async () => {
    server = await start();
  });
  after(async () => {
    await server.stop();
  });

  const post = (path: string, body?: unknown) =>
    server.request('POST', path, body === undefined ? {} : { body });

  test('create, then 409 DEVICE_EXISTS; update and update-column; 404 for a device that is not there', async () => {
    const mac = '02:ab:00:00:00:01';
    assert.equal((await post(`/device/${mac}`, { createNew: true, devName: 'printer' })).status, 200);
    const again = await post(`/device/${mac}`, { createNew: true });
    assert.equal(again.status, 409);
    assert.equal(again.json.code, 'DEVICE_EXISTS');
    assert.equal((await post(`/device/${mac}`, { devOwner: 'office' })).status, 200);
    const column = await post(`/device/${mac}/update-column`, {
      columnName: 'devVendor',
      columnValue: 'Acme',
    });
    assert.equal(column.status, 200, column.text);
    const missing = await post('/device/02:ab:00:00:00:99', { devOwner: 'x' });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.code, 'DEVICE_NOT_FOUND');
    const badColumn = await post(`/device/${mac}/update-column`, { columnName: 'devMac', columnValue: 'x' });
    assert.equal(badColumn.status, 400, badColumn.text);
  });

  test('copy creates the target (then it exists); reset-props and events/delete answer for devices only', async () => {
    const from = '02:ab:00:00:01:01';
    const to = '02:ab:00:00:01:02';
    assert.equal((await post(`/device/${from}`, { createNew: true, devName: 'nas' })).status, 200);
    const copied = await post('/device/copy', { macFrom: from, macTo: to });
    assert.equal(copied.status, 200, copied.text);
    assert.equal((await post(`/device/${to}`, { createNew: true })).json.code, 'DEVICE_EXISTS');
    assert.equal((await post('/device/copy', { macFrom: '02:ab:00:00:01:99', macTo: to })).status, 404);
    assert.equal((await post(`/device/${to}/reset-props`)).status, 200);
    assert.equal((await post('/device/02:ab:00:00:01:98/reset-props')).status, 404);
    assert.equal((await server.request('DELETE', `/device/${to}/events/delete`)).status, 200);
    assert.equal((await server.request('DELETE', '/device/02:ab:00:00:01:98/events/delete')).status, 404);
  });

  test('a parent loop is refused (400 PARENT_CYCLE) and changes nothing', async () => {
    const router = '02:ab:00:00:02:01';
    const sw = '02:ab:00:00:02:02';
    assert.equal((await post(`/device/${router}`, { createNew: true })).status, 200);
    assert.equal((await post(`/device/${sw}`, { createNew: true, devParentMAC: router })).status, 200);
    const loop = await post(`/device/${router}`, { devParentMAC: sw });
    assert.equal(loop.status, 400);
    assert.equal(loop.json.code, 'PARENT_CYCLE');
    const self = await post(`/device/${sw}/update-column`, { columnName: 'devParentMAC', columnValue: sw });
    assert.equal(self.json.code, 'PARENT_CYCLE');
  });

  test('delete, then 404; the history lists answer for a device and 404 for none', async () => {
    const mac = '02:ab:00:00:03:01';
    assert.equal((await post(`/device/${mac}`, { createNew: true })).status, 200);
    const events = await server.request('GET', `/device/${mac}/events`);
    assert.equal(events.status, 200, events.text);
    assert.equal(events.json.total, 0);
    assert.equal((await server.request('GET', `/device/${mac}/sessions`)).status, 200);
    assert.equal((await server.request('DELETE', `/device/${mac}/delete`)).status, 200);
    assert.equal((await server.request('DELETE', `/device/${mac}/delete`)).status, 404);
    assert.equal((await server.request('GET', `/device/${mac}/events`)).status, 404);
  });
});
