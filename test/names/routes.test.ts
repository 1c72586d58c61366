/**
 * POST /device/<mac>/resolve-name through the real app, with an mDNS responder on loopback, on both
 * stores (test/helpers/stores.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InProcessServer } from '../helpers/inject.js';
import { onEachStore } from '../helpers/stores.js';
import { freeUdpPort, mdnsAnswer, startResponder, type Responder } from '../helpers/name-responders.js';

onEachStore('POST /device/<mac>/resolve-name', (_store, start) => {
  let server: InProcessServer;
  let responder: Responder;
  before(async () => {
    const port = await freeUdpPort('127.0.3.1');
    responder = await startResponder(
      '127.0.3.1',
      port,
      'answer',
      mdnsAnswer({ '127.0.3.1': 'living-room-tv' }),
    );
    server = await start(
      { NAME_MDNS: 'on', NAME_TIMEOUT_MS: '300' },
      { testOnlyNamePorts: { mdns: port, netbios: port } },
    );
  });
  after(async () => {
    await server.stop();
    await responder.close();
  });

  test('names a device now, stores it under the rules, and reports a user name without replacing it', async () => {
    let res = await server.request('POST', '/device/02:00:00:00:03:01', {
      body: { createNew: true, devLastIP: '127.0.3.1' },
    });
    assert.equal(res.status, 200, res.text);
    res = await server.request('POST', '/device/02-00-00-00-03-01/resolve-name');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, {
      success: true,
      name: 'living-room-tv',
      source: 'mdns',
      candidates: [{ source: 'mdns', name: 'living-room-tv' }],
    });
    const device = (await server.request('GET', '/device/02:00:00:00:03:01')).json;
    assert.equal(device.devName, 'living-room-tv');
    assert.equal(device.devNameSource, 'mdns');

    await server.request('POST', '/device/02:00:00:00:03:01', { body: { devName: 'TV' } });
    res = await server.request('POST', '/device/02:00:00:00:03:01/resolve-name');
    assert.deepEqual(res.json, {
      success: true,
      name: 'TV',
      source: 'user',
      candidates: [{ source: 'mdns', name: 'living-room-tv' }],
    });
    assert.equal((await server.request('GET', '/device/02:00:00:00:03:01')).json.devName, 'TV');
  });

  test('a device without an answer keeps no name; unknown devices are 404, bad MACs 400', async () => {
    await server.request('POST', '/device/02:00:00:00:03:02', {
      body: { createNew: true, devLastIP: '127.0.3.2' },
    });
    let res = await server.request('POST', '/device/02:00:00:00:03:02/resolve-name');
    assert.deepEqual(res.json, { success: true, name: '(unknown)', source: '', candidates: [] });
    // devLastIP is editable text: a host name or garbage there is never asked (nor resolved).
    for (const devLastIP of ['nas.lan', '-oops', '', '10.0.0.999']) {
      await server.request('POST', '/device/02:00:00:00:03:02', { body: { devLastIP } });
      res = await server.request('POST', '/device/02:00:00:00:03:02/resolve-name');
      assert.deepEqual(res.json, { success: true, name: '(unknown)', source: '', candidates: [] }, devLastIP);
    }
    res = await server.request('POST', '/device/02:00:00:00:03:09/resolve-name');
    assert.equal(res.status, 404);
    assert.equal(res.json.code, 'DEVICE_NOT_FOUND');
    res = await server.request('POST', '/device/not-a-mac/resolve-name');
    assert.equal(res.status, 400);
  });
});
