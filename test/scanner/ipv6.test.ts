/** IPv6 neighbours: parsing captured real output, the address ranking, and the commands run. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DiscoveryCommand, RunTool, ToolResult } from '../../src/scanner/discovery.js';
import { mergeSightings } from '../../src/scanner/discovery.js';
import {
  discoverIpv6,
  ipv6EchoArgs,
  ipv6NeighbourArgs,
  parseEchoReplies,
  parseIpv6Neighbours,
  prefix64,
  primaryIpv6,
} from '../../src/scanner/ipv6.js';
import { fixture } from './helpers.js';

const h1 = 'aa:88:3b:81:b4:61';
const h2 = 'ee:4e:37:79:0c:2b';
const router = '9e:f7:a4:7e:0f:e7';

describe('IPv6 neighbours', () => {
  test('the echo replies: every source address, canonical, the interface zone dropped', () => {
    assert.deepEqual([...parseEchoReplies(fixture('ping6-allnodes.txt'))].sort(), [
      'fe80::9cf7:a4ff:fe7e:fe7',
      'fe80::a888:3bff:fe81:b461',
      'fe80::d097:4cff:fee8:e356',
      'fe80::ec4e:37ff:fe79:c2b',
    ]);
    assert.deepEqual([...parseEchoReplies('PING ff02::1(ff02::1) from :: eth0: 56 data bytes\n')], []);
  });

  test('the table: MACs that answered the echo, with every address they hold; prefixes', () => {
    const replies = parseEchoReplies(fixture('ping6-allnodes.txt'));
    const { neighbours, prefixes } = parseIpv6Neighbours(fixture('ip-neigh6.json'), replies);
    assert.deepEqual(neighbours, [
      { mac: router, addresses: ['fe80::9cf7:a4ff:fe7e:fe7'] },
      { mac: h1, addresses: ['fd00:231::11', 'fe80::a888:3bff:fe81:b461'] },
      { mac: h2, addresses: ['fe80::ec4e:37ff:fe79:c2b'] },
    ]);
    assert.deepEqual(prefixes, ['fd00:231:0:0::/64', 'fe80:0:0:0::/64']);
  });

  test('a link-local entry counts when it replied to this echo; another address by its state', () => {
    const table = JSON.stringify([
      { dst: 'fe80::1', lladdr: '02:00:00:00:00:01', state: ['REACHABLE'] },
      { dst: 'fe80::2', lladdr: '02:00:00:00:00:02', state: ['STALE'] },
      { dst: 'fe80::3', lladdr: '02:00:00:00:00:03', state: ['PROBE'] },
      { dst: 'fe80::4', lladdr: '02:00:00:00:00:04', state: ['STALE'] }, // no reply, stale
      { dst: 'fe80::9', lladdr: '02:00:00:00:00:09', state: ['REACHABLE'] }, // left: no reply
      { dst: 'fd00::a', lladdr: '02:00:00:00:00:0a', state: ['REACHABLE'] }, // own traffic
      { dst: 'fd00::b', lladdr: '02:00:00:00:00:0b', state: ['STALE'] },
      { dst: 'fe80::5', state: ['FAILED'] },
      { dst: 'fe80::6', lladdr: '02:00:00:00:00:06', state: ['INCOMPLETE'] },
      { dst: 'not-an-address', lladdr: '02:00:00:00:00:07', state: ['REACHABLE'] },
      { dst: '2001:db8::8', lladdr: '02:00:00:00:00:01', state: ['STALE'], router: null },
    ]);
    const replies = new Set(['fe80::1', 'fe80::2', 'fe80::3', 'fe80::5', 'fe80::6']);
    const { neighbours } = parseIpv6Neighbours(table, replies);
    assert.deepEqual(neighbours, [
      { mac: '02:00:00:00:00:01', addresses: ['2001:db8::8', 'fe80::1'] },
      { mac: '02:00:00:00:00:02', addresses: ['fe80::2'] }, // STALE, but it replied
      { mac: '02:00:00:00:00:03', addresses: ['fe80::3'] },
      { mac: '02:00:00:00:00:0a', addresses: ['fd00::a'] },
    ]);
    assert.deepEqual(parseIpv6Neighbours('', replies).neighbours, []);
    assert.throws(() => parseIpv6Neighbours('{"dst":1}', replies), /not a JSON array/);
  });

  test('devPrimaryIPv6: global, else unique-local, else link-local; multicast and others never', () => {
    assert.equal(primaryIpv6(['fe80::1', 'fd00::5', '2a01:4f8::1']), '2a01:4f8::1');
    assert.equal(primaryIpv6(['fe80::1', 'fd00::5']), 'fd00::5');
    assert.equal(primaryIpv6(['fe80::9', 'fe80::1']), 'fe80::1');
    assert.equal(primaryIpv6(['ff02::1', '::1', '10.0.0.1']), '');
    assert.equal(primaryIpv6([]), '');
    assert.equal(prefix64('fd00:231::11'), 'fd00:231:0:0::/64');
  });

  test('merge: an IPv6-only MAC is an observation with no IPv4 address; a dual-stack one keeps both', () => {
    const merged = mergeSightings([
      {
        tool: 'arp-scan',
        sightings: [{ mac: h1, ip: '10.0.0.11', vendor: 'Acme' }],
        neighbours: [
          { mac: h1, addresses: ['fd00::11', 'fe80::11'] },
          { mac: h2, addresses: ['fe80::12'] },
        ],
      },
    ]);
    assert.deepEqual(merged.get(h1), {
      ips: ['10.0.0.11'],
      vendor: 'Acme',
      source: 'arp-scan',
      ipv6: ['fd00::11', 'fe80::11'],
    });
    assert.deepEqual(merged.get(h2), { ips: [], vendor: '', source: 'ipv6-neighbours', ipv6: ['fe80::12'] });
  });

  test('the commands: argument arrays through the runner with the time limit; no IPv6 is no error', async () => {
    const calls: Array<[DiscoveryCommand, readonly string[], number]> = [];
    const answers = new Map<DiscoveryCommand, ToolResult>([
      ['ping', { stdout: fixture('ping6-allnodes.txt'), stderr: '', exitCode: 0 }],
      ['ip', { stdout: fixture('ip-neigh6.json'), stderr: '', exitCode: 0 }],
    ]);
    const runTool: RunTool = async (tool, args, { timeoutMs }) => {
      calls.push([tool, args, timeoutMs]);
      const answer = answers.get(tool);
      assert.ok(answer);
      return answer;
    };
    const result = await discoverIpv6('eth0', { runTool, timeoutMs: 5000 });
    assert.equal(result.read, true);
    assert.equal(result.neighbours.length, 3);
    assert.deepEqual(calls, [
      ['ping', ['-6', '-c', '2', '-I', 'eth0', 'ff02::1'], 5000],
      ['ip', ['-j', '-6', 'neigh', 'show', 'dev', 'eth0'], 5000],
    ]);
    assert.deepEqual(ipv6EchoArgs('br-lan'), ['-6', '-c', '2', '-I', 'br-lan', 'ff02::1']);
    assert.deepEqual(ipv6NeighbourArgs('br-lan'), ['-j', '-6', 'neigh', 'show', 'dev', 'br-lan']);

    // No IPv6 on the interface: not even its own reply (exit 1); the table is not read.
    calls.length = 0;
    answers.set('ping', { stdout: '', stderr: fixture('ping6-noipv6.stderr'), exitCode: 1 });
    assert.deepEqual(await discoverIpv6('eth0', { runTool, timeoutMs: 5000 }), {
      read: false,
      neighbours: [],
      prefixes: [],
    });
    assert.deepEqual(
      calls.map((c) => c[0]),
      ['ping'],
    );
    // ping not installed (the runner rejects): skipped too; an abort is passed on.
    const missing: RunTool = () => Promise.reject(new Error('ping is not installed'));
    assert.equal((await discoverIpv6('eth0', { runTool: missing, timeoutMs: 5000 })).read, false);
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      discoverIpv6('eth0', { runTool: missing, timeoutMs: 5000, signal: controller.signal }),
      /not installed/,
    );
  });
});
