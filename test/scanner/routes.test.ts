import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InProcessServer } from '../helpers/inject.js';
import { notAuthorizedBody, TestServer } from '../helpers/server.js';
import { waitForFirstCycle } from './helpers.js';

describe('/nettools/scan, scanning off (in process)', () => {
  let server: InProcessServer;
  before(async () => {
    server = await InProcessServer.start();
  });
  after(async () => {
    await server.stop();
  });

  test('GET says disabled, no cycle yet', async () => {
    const res = await server.request('GET', '/nettools/scan');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { success: true, enabled: false, running: false, lastCycle: null });
  });

  test('POST is a 409 naming SCAN_SUBNETS', async () => {
    const res = await server.request('POST', '/nettools/scan');
    assert.equal(res.status, 409);
    assert.equal(res.json.error, 'Conflict');
    assert.match(String(res.json.message), /SCAN_SUBNETS/);
  });

  test('both need the token; other methods are 405', async () => {
    for (const method of ['GET', 'POST']) {
      const res = await server.request(method, '/nettools/scan', { token: null });
      assert.equal(res.status, 403);
      assert.deepEqual(res.body, notAuthorizedBody);
    }
    assert.equal((await server.request('DELETE', '/nettools/scan')).status, 405);
  });

  test('both are in the OpenAPI document under the scanning tag', async () => {
    const spec = await server.request('GET', '/openapi.json', { token: null });
    const paths = spec.json.paths as Record<
      string,
      Record<string, { tags?: string[] } | undefined> | undefined
    >;
    const scanPath = paths['/nettools/scan'];
    assert.deepEqual([scanPath?.get?.tags, scanPath?.post?.tags], [['scanning'], ['scanning']]);
  });
});

describe('/nettools/scan over HTTP, scanning configured', () => {
  test('a failed cycle answers 500 with details, and GET shows its errors; bad SCAN_SUBNETS stops start-up', async () => {
    // The interface does not exist, so every cycle fails (and changes nothing).
    const server = await TestServer.start({ env: { SCAN_SUBNETS: '10.231.77.0/24@nkscan-none0' } });
    try {
      await waitForFirstCycle(server);
      const res = await server.request('POST', '/nettools/scan');
      assert.equal(res.status, 500);
      assert.equal(res.json.error, 'Scan Failed');
      assert.equal(typeof res.json.details, 'string');
      const status = await server.request('GET', '/nettools/scan');
      const lastCycle = status.json.lastCycle as { errors: string[]; newDevices: number };
      assert.equal(lastCycle.newDevices, 0);
      assert.ok(lastCycle.errors.length > 0);
    } finally {
      await server.stop();
    }
    await assert.rejects(
      TestServer.start({ env: { SCAN_SUBNETS: '10.0.0.0/24@-oops' } }),
      /not an interface name/,
    );
  });
});
