import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config.js';
import { parseScanSubnets, subnetScope } from '../../src/scanner/subnets.js';

describe('SCAN_SUBNETS', () => {
  test('empty means scanning off', () => {
    assert.deepEqual(parseScanSubnets(''), []);
    assert.deepEqual(parseScanSubnets('   '), []);
  });

  test('several entries, spaces around commas allowed', () => {
    assert.deepEqual(parseScanSubnets('192.168.1.0/24@eth0, 10.0.0.0/16@br-lan.10'), [
      { cidr: '192.168.1.0/24', iface: 'eth0', size: 256, label: '192.168.1.0/24@eth0' },
      { cidr: '10.0.0.0/16', iface: 'br-lan.10', size: 65536, label: '10.0.0.0/16@br-lan.10' },
    ]);
  });

  test('a third part is the subnet gateway, inside the range', () => {
    assert.deepEqual(parseScanSubnets('192.168.1.0/24@eth0@192.168.1.254'), [
      {
        cidr: '192.168.1.0/24',
        iface: 'eth0',
        size: 256,
        label: '192.168.1.0/24@eth0',
        gateway: '192.168.1.254',
      },
    ]);
  });

  const bad: [string, RegExp][] = [
    ['192.168.1.0/24', /entry 1 \('192.168.1.0\/24'\) must be cidr@interface/],
    ['192.168.1.0/24@eth0,', /entry 2 is empty/],
    ['192.168.1.5@eth0', /must be an IPv4 range with a prefix/],
    ['fe80::/64@eth0', /not an IPv4 CIDR/],
    ['192.168.01.0/24@eth0', /not an IPv4 CIDR/],
    ['192.168.1.0/33@eth0', /not an IPv4 CIDR/],
    ['10.0.0.0/8@eth0', /covers 16777216 addresses/],
    ['192.168.1.0/24@-i', /'-i' is not an interface name/],
    ['192.168.1.0/24@', /'' is not an interface name/],
    ['192.168.1.0/24@eth0;reboot', /is not an interface name/],
    ['192.168.1.0/24@eth 0', /is not an interface name/],
    ['192.168.1.0/24@.', /'\.' is not an interface name/],
    ['192.168.1.0/24@..', /'\.\.' is not an interface name/],
    ['192.168.1.0/24@averyveryverylong0', /is not an interface name/],
    ['192.168.1.0/24@eth0@eth1', /gateway \(third part\) must be an IPv4 address/],
    ['192.168.1.0/24@eth0@1.2.3.4@x', /must be cidr@interface or cidr@interface@gateway/],
    ['192.168.1.0/24@eth0@10.0.0.1', /gateway 10.0.0.1 is not inside 192.168.1.0\/24/],
    ['192.168.1.0/24@eth0@192.168.1.01', /gateway \(third part\) must be an IPv4 address/],
    ['192.168.1.0/24@eth0@192.168.1.1;reboot', /gateway \(third part\) must be an IPv4 address/],
    ['192.168.1.0/24@eth0@$(id)', /gateway \(third part\) must be an IPv4 address/],
    ['192.168.1.0/24@eth0@-oX', /gateway \(third part\) must be an IPv4 address/],
    ['192.168.1.0/24@eth0@', /gateway \(third part\) must be an IPv4 address/],
    ['192.168.1.0/24@eth0@192.168.1.\n1', /gateway \(third part\) must be an IPv4 address/],
    ['192.168.1.0/24@eth0,192.168.1.0/24@eth0', /entry 2 .* is listed twice/],
    ['１92.168.1.0/24@eth0', /not an IPv4 CIDR/],
  ];
  for (const [raw, message] of bad) {
    test(`refuses ${JSON.stringify(raw)}`, () => {
      assert.throws(
        () => parseScanSubnets(raw),
        (err) => err instanceof ConfigError && message.test(err.message),
      );
    });
  }
});

describe('subnetScope: which addresses a cycle judges', () => {
  test('inside any of the subnets (host bits of the entry ignored), nothing else', () => {
    const inScope = subnetScope(
      parseScanSubnets('192.168.1.77/24@eth0,10.20.0.0/16@eth1,172.16.5.9/32@eth2'),
    );
    for (const ip of ['192.168.1.0', '192.168.1.255', '10.20.255.1', '10.20.0.0', '172.16.5.9'])
      assert.equal(inScope(ip), true, ip);
    for (const ip of [
      '192.168.2.1',
      '10.21.0.0',
      '172.16.5.8',
      '',
      'fd00::1',
      '192.168.1',
      'x.y.z.w',
      '1.2.3.256',
    ])
      assert.equal(inScope(ip), false, ip);
  });

  test('no subnets: nothing is in scope', () => {
    assert.equal(subnetScope([])('10.0.0.1'), false);
  });
});
