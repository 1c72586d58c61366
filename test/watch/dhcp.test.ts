/**
 * The DHCP watch's parsing: the script's text output (in the shape nmap 7.93 prints; the real
 * output is read by test/watch/dhcp-e2e.test.ts), hostile option values and fuzzed output never
 * throw and never give anything but valid IPv4 addresses.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { describe, test } from 'node:test';
import { dhcpDiscoverArgs, parseDhcpDiscover } from '../../src/watch/dhcp.js';
import { ipVersion } from '../../src/validation.js';

const output = `Starting Nmap 7.93 ( https://nmap.org ) at 2026-11-26 13:20 UTC
Pre-scan script results:
| broadcast-dhcp-discover:
|   Response 1 of 2:
|     Interface: nk1x28-l
|     IP Offered: 10.231.40.151
|     DHCP Message Type: DHCPOFFER
|     Server Identifier: 10.231.40.11
|     IP Address Lease Time: 1h00m00s
|     Subnet Mask: 255.255.255.0
|   Response 2 of 2:
|     Interface: nk1x28-l
|     IP Offered: 10.231.40.104
|     DHCP Message Type: DHCPOFFER
|     Server Identifier: 10.231.40.10
|_    Router: 10.231.40.10
WARNING: No targets were specified, so 0 hosts scanned.
Nmap done: 0 IP addresses (0 hosts up) scanned in 5.12 seconds
`;

describe('DHCP watch parsing', () => {
  test('arguments: the broadcast script on one interface, no targets', () => {
    assert.deepEqual(dhcpDiscoverArgs('eth0'), [
      '--script',
      'broadcast-dhcp-discover',
      '--script-args',
      'broadcast-dhcp-discover.timeout=5s',
      '-e',
      'eth0',
      '-n',
      '-sn',
    ]);
  });

  test('one offer per response block', () => {
    assert.deepEqual(parseDhcpDiscover(output), [
      { server: '10.231.40.11', offered: '10.231.40.151' },
      { server: '10.231.40.10', offered: '10.231.40.104' },
    ]);
  });

  test('garbage options: a block without a valid server or offer is skipped', () => {
    const hostile = output
      .replace('Server Identifier: 10.231.40.11', 'Server Identifier: 10.231.40.11; reboot')
      .replace('IP Offered: 10.231.40.104', 'IP Offered: 10.231.40.104\u001b[2J');
    assert.deepEqual(parseDhcpDiscover(hostile), []);
    assert.deepEqual(parseDhcpDiscover('|     Server Identifier: 010.1.1.1\n|     IP Offered: 1.1.1.1'), []);
    assert.deepEqual(parseDhcpDiscover(''), []);
  });

  test('fuzzed output: only valid IPv4 addresses, never a throw', () => {
    for (let i = 0; i < 3000; i++) {
      const at = randomInt(0, output.length);
      const text =
        i % 2 === 0
          ? randomBytes(randomInt(1, 300)).toString('latin1')
          : output.slice(0, at) + randomBytes(randomInt(1, 20)).toString('latin1') + output.slice(at);
      for (const offer of parseDhcpDiscover(text)) {
        assert.equal(ipVersion(offer.server), 4);
        assert.equal(ipVersion(offer.offered), 4);
      }
    }
  });
});

test('DHCP_SERVERS: IPv4 addresses only, a bad item named by position and never echoed', async () => {
  const { ConfigError, loadConfig } = await import('../../src/config.js');
  const dir = '/nonexistent-netkeep-config-dir';
  const config = loadConfig({ DHCP_SERVERS: ' 10.0.0.1, 10.0.0.2,10.0.0.1' }, dir);
  assert.deepEqual(config.DHCP_SERVERS, ['10.0.0.1', '10.0.0.2']);
  assert.deepEqual(loadConfig({}, dir).DHCP_SERVERS, []);
  for (const bad of ['10.0.0.1,$(reboot)', '10.0.0.1,10.0.0.01', 'fe80::1', '10.0.0.1;id']) {
    assert.throws(
      () => loadConfig({ DHCP_SERVERS: bad }, dir),
      (err) =>
        err instanceof ConfigError &&
        /^DHCP_SERVERS: item \d is not an IPv4 address$/.test(err.message) &&
        !err.message.includes('reboot'),
      bad,
    );
  }
});
