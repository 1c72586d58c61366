/** traceroute through a test LAN: the far host is two routers away from the server. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestLan, testLanSkipReason, type TestLan } from '../helpers/testlan.js';
import { TestServer } from '../helpers/server.js';
import { nextToolRun, toolRunCount } from '../helpers/toolruns.js';

const skip = testLanSkipReason('traceroute tests');

describe('POST /nettools/traceroute', { skip }, () => {
  let lan: TestLan;
  let server: TestServer;
  let quick: TestServer;

  before(async () => {
    lan = await createTestLan({ hosts: 1, far: true });
    [server, quick] = await Promise.all([
      TestServer.start({ env: { TRACEROUTE_MAX_HOPS: '8' } }),
      TestServer.start({ env: { TRACEROUTE_TIMEOUT_MS: '1000' } }),
    ]);
  });
  after(async () => {
    await Promise.all([server.stop(), quick.stop()]);
    await lan.destroy();
  });

  test('to the host two hops away lists both routers, then the host', async () => {
    const far = lan.far;
    assert.ok(far);
    const res = await server.request('POST', '/nettools/traceroute', { body: { devLastIP: far.ip } });
    assert.equal(res.status, 200);
    assert.equal(res.json.success, true);
    const output = String(res.json.output);
    const lines = output.split('\n');
    assert.match(lines[0] ?? '', new RegExp(`^traceroute to ${far.ip.replace(/\./g, '\\.')} .*8 hops max`));
    const router2 = far.ip.replace(/\.\d+\.10$/, (m) => `.${Number(m.split('.')[1]) - 1}.2`);
    // A probe lost to scheduling prints `*` before the address: allowed, the address must follow.
    const hop = (n: number, ip: string): RegExp => new RegExp(`^ ${n}  (\\* )*${ip.replace(/\./g, '\\.')} `);
    assert.match(lines[1] ?? '', hop(1, lan.gateway));
    assert.match(lines[2] ?? '', hop(2, router2));
    assert.match(lines[3] ?? '', hop(3, far.ip));
    assert.ok(!output.endsWith('\n'), 'no trailing blank lines');
  });

  test('IPv6 literal uses -6 (loopback)', async () => {
    const seen = await toolRunCount(server);
    const res = await server.request('POST', '/nettools/traceroute', { body: { devLastIP: '::1' } });
    assert.equal(res.status, 200);
    assert.match(String(res.json.output), /^traceroute to ::1/);
    const run = await nextToolRun(server, seen);
    assert.deepEqual((run.args as string[]).slice(0, 2), ['-6', '-n']);
  });

  test('an address on the LAN that does not answer runs into TRACEROUTE_TIMEOUT_MS: 504', async () => {
    // Nobody answers ARP for it, so the last hop waits ~3 s for "host unreachable": longer than 1 s.
    const res = await quick.request('POST', '/nettools/traceroute', { body: { devLastIP: lan.freeIp() } });
    assert.equal(res.status, 504);
    assert.equal(res.json.error, 'Tool timed out');
    assert.match(String(res.json.message), /timed out after 1000 ms/);
  });

  test('anything but one address literal is 400 and starts no process', async () => {
    const runs = await toolRunCount(server);
    for (const devLastIP of [
      'localhost',
      'example.com',
      '10.0.0.0/24',
      '1.2.3.4; id',
      '-n',
      '--help',
      '010.1.2.3',
      '1.2.3',
      '1.2.3.4 5.6.7.8',
      '1.2.3.4\n',
      '１２７.0.0.1',
      '١٢٧.0.0.1',
      'fe80::1%eth0',
      '',
    ]) {
      const res = await server.request('POST', '/nettools/traceroute', { body: { devLastIP } });
      assert.equal(res.status, 400, JSON.stringify(devLastIP));
      assert.match(String(res.json.message), /devLastIP/);
    }
    for (const body of [{}, { devLastIP: 1234 }, { devLastIP: null }, { devLastIP: ['1.2.3.4'] }]) {
      const res = await server.request('POST', '/nettools/traceroute', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(String(res.json.message), /devLastIP/);
    }
    assert.equal(await toolRunCount(server), runs, 'no command was started');
  });
});
