/**
 * IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) are refused with a 400 by every tool input that
 * takes an address, naming the IPv4 address to give instead. Before, traceroute took one, ran
 * `traceroute -6` and answered 500 "Cannot handle host cmdline arg".
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mappedIpv4Hint, parseScanTarget } from '../../src/validation.js';
import { TestServer } from '../helpers/server.js';
import { toolRunCount } from '../helpers/toolruns.js';

const mapped = ['::ffff:127.0.0.1', '::FFFF:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:1'];

test('the validator refuses mapped addresses and ranges, and says which IPv4 address to give', () => {
  for (const input of [...mapped, '::ffff:127.0.0.1/128', '::ffff:7f00:0/120']) {
    assert.equal(parseScanTarget(input), null, input);
    assert.match(mappedIpv4Hint(input), /give the IPv4 address \(127\.0\.0\.[01]\)/, input);
  }
  for (const other of ['127.0.0.1', '::1', 'nas.lan', '::ffff', '-1'])
    assert.equal(mappedIpv4Hint(other), '', other);
});

describe('tools over HTTP', () => {
  let server: TestServer;
  before(async () => {
    server = await TestServer.start();
  });
  after(async () => {
    await server.stop();
  });

  test('traceroute, nslookup, nmap and wakeonlan answer 400 and run nothing', async () => {
    const runs = await toolRunCount(server);
    for (const address of mapped) {
      for (const [path, body, field] of [
        ['/nettools/traceroute', { devLastIP: address }, 'devLastIP'],
        ['/nettools/nslookup', { devLastIP: address }, 'devLastIP'],
        ['/nettools/nmap', { scan: address, mode: 'fast' }, 'scan'],
        ['/nettools/nmap', { scan: `${address}/128`, mode: 'fast' }, 'scan'],
        ['/nettools/wakeonlan', { devMac: '02:00:00:00:00:01', broadcast: address }, 'broadcast'],
      ] as const) {
        const res = await server.request('POST', path, { body });
        assert.equal(res.status, 400, `${path} ${address}: ${res.text}`);
        assert.match(String(res.json.message), new RegExp(`'${field}'`));
        if (field !== 'broadcast')
          assert.match(String(res.json.message), /IPv4-mapped IPv6 .* \(127\.0\.0\.1\)/);
      }
    }
    assert.equal(await toolRunCount(server), runs, 'no command ran');
  });
});
