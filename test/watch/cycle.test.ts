/**
 * The security watch's cycle logic as tables: IP conflicts from duplicate answers, gateways from
 * `ip -j route` (captured real output, then hostile and fuzzed), gateway changes, and a hostile
 * SCAN_SUBNETS gateway refused at start with exit 2.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { SubnetResult } from '../../src/scanner/discovery.js';
import { parseArpScan } from '../../src/scanner/discovery.js';
import { findConflicts, planConflicts } from '../../src/watch/conflicts.js';
import { parseIpRoutes, planGateways, subnetGateway } from '../../src/watch/gateway.js';
import { parseScanSubnets } from '../../src/scanner/subnets.js';
import { runServerToExit } from '../helpers/server.js';

const now = new Date('2026-01-02T03:04:05Z');
const A = '02:00:00:00:00:0a';
const B = '02:00:00:00:00:0b';
const C = '02:00:00:00:00:0c';

function result(...pairs: [ip: string, mac: string][]): SubnetResult {
  return { tool: 'arp-scan', sightings: pairs.map(([ip, mac]) => ({ ip, mac, vendor: '' })) };
}

describe('IP Conflict', () => {
  test('duplicate arp-scan answers (no --ignoredups) become one conflict; a MAC answering twice does not', () => {
    const text = `10.0.0.5\t${A}\tX\n10.0.0.5\t${B}\tY\n10.0.0.6\t${C}\t\n10.0.0.6\t${C}\t\n`;
    const conflicts = findConflicts([{ tool: 'arp-scan', sightings: parseArpScan(text) }]);
    assert.deepEqual([...conflicts], [['10.0.0.5', [A, B]]]);
  });

  test('one event per MAC naming the others; not repeated while it persists; forgotten when gone', () => {
    const current = new Map([['10.0.0.5', [A, B, C]]]);
    const first = planConflicts(current, new Map(), now);
    assert.deepEqual(
      first.events.map((e) => [e.mac, e.ip, e.type, e.additionalInfo, e.pendingAlert]),
      [
        [A, '10.0.0.5', 'IP Conflict', `10.0.0.5 also answered by ${B}, ${C}`, 1],
        [B, '10.0.0.5', 'IP Conflict', `10.0.0.5 also answered by ${A}, ${C}`, 1],
        [C, '10.0.0.5', 'IP Conflict', `10.0.0.5 also answered by ${A}, ${B}`, 1],
      ],
    );
    const remembered = new Map([['10.0.0.5', `${A},${B},${C}`]]);
    assert.deepEqual(planConflicts(current, remembered, now), { events: [], memory: new Map() });
    // Another set of MACs is another conflict.
    assert.equal(planConflicts(new Map([['10.0.0.5', [A, B]]]), remembered, now).events.length, 2);
    const gone = planConflicts(new Map(), remembered, now);
    assert.deepEqual([gone.events, [...gone.memory]], [[], [['10.0.0.5', undefined]]]);
  });
});

/** `ip -j -4 route show` captured on a Debian 12 host with a test LAN (addresses as they were). */
const capturedRoutes =
  '[{"dst":"default","gateway":"172.17.0.1","dev":"eth0","flags":[]},' +
  '{"dst":"10.231.41.0/24","gateway":"10.231.40.1","dev":"nk123x28-l","flags":[]},' +
  '{"dst":"10.231.40.0/24","dev":"nk123x28-l","protocol":"kernel","scope":"link","prefsrc":"10.231.40.2","flags":[]},' +
  '{"dst":"172.17.0.0/16","dev":"eth0","protocol":"kernel","scope":"link","prefsrc":"172.17.0.2","flags":[]}]\n';

describe('Gateway Changed', () => {
  const [lan] = parseScanSubnets('10.231.40.0/24@nk123x28-l');
  const [configured] = parseScanSubnets('10.231.40.0/24@nk123x28-l@10.231.40.254');
  assert.ok(lan && configured);

  test('the next hop through the subnet interface inside the subnet; a configured one wins', () => {
    const routes = parseIpRoutes(capturedRoutes);
    assert.equal(subnetGateway(lan, routes), '10.231.40.1');
    assert.equal(subnetGateway(configured, routes), '10.231.40.254');
    const [other] = parseScanSubnets('192.168.9.0/24@eth0');
    assert.ok(other);
    // eth0's default route goes through 172.17.0.1, outside 192.168.9.0/24: no gateway.
    assert.equal(subnetGateway(other, routes), undefined);
  });

  test('hostile and fuzzed `ip -j route` output yields only clean routes, never throws', () => {
    const hostile = [
      '',
      'not json',
      '{}',
      'null',
      '[null, 1, "x", []]',
      '[{"dst":"default","gateway":"10.231.40.1; reboot","dev":"nk123x28-l"}]',
      '[{"dst":"default","gateway":"010.231.40.1","dev":"nk123x28-l"}]',
      '[{"dst":"default","gateway":{"toString":1},"dev":"nk123x28-l"}]',
      '[{"dst":"default","gateway":"fe80::1","dev":"nk123x28-l"}]',
      '[{"__proto__":{"gateway":"10.231.40.1"},"dst":"default","dev":"nk123x28-l"}]',
    ];
    for (const text of hostile) {
      const routes = parseIpRoutes(text);
      assert.equal(subnetGateway(lan, routes), undefined, text);
    }
    for (let i = 0; i < 2000; i++) {
      const bytes = randomBytes(1 + (i % 200));
      const cut = capturedRoutes.slice(0, i % capturedRoutes.length) + bytes.toString('latin1');
      for (const text of [bytes.toString('utf8'), cut]) {
        const routes = parseIpRoutes(text);
        for (const r of routes) assert.match(r.gateway, /^\d{1,3}(\.\d{1,3}){3}$/);
      }
    }
  });

  test('first sighting remembered silently; another MAC is one event on it; no answer changes nothing', () => {
    const gw = '10.231.40.1';
    const first = planGateways([gw], [result([gw, A])], new Map(), now);
    assert.deepEqual([first.events, [...first.memory]], [[], [[gw, A]]]);
    const same = planGateways([gw], [result([gw, A])], new Map([[gw, A]]), now);
    assert.deepEqual([same.events, [...same.memory]], [[], []]);
    const moved = planGateways([gw], [result([gw, B])], new Map([[gw, A]]), now);
    assert.deepEqual(
      moved.events.map((e) => [e.mac, e.ip, e.type, e.additionalInfo, e.pendingAlert]),
      [[B, gw, 'Gateway Changed', `${gw} was ${A}`, 1]],
    );
    assert.deepEqual([...moved.memory], [[gw, B]]);
    const silent = planGateways([gw], [result(['10.231.40.9', B])], new Map([[gw, A]]), now);
    assert.deepEqual([silent.events, [...silent.memory]], [[], []]);
    // Two MACs (a conflict, reported as such) including the remembered one: not a change.
    assert.deepEqual(planGateways([gw], [result([gw, B], [gw, A])], new Map([[gw, A]]), now).events, []);
    assert.deepEqual(planGateways([undefined], [result([gw, B])], new Map([[gw, A]]), now).events, []);
  });

  test('a hostile SCAN_SUBNETS gateway is refused at start: exit 2 naming the variable', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-watch-config-'));
    try {
      for (const gateway of ['$(reboot)', '10.231.40.1;id', '-oX', '10.231.41.1']) {
        const run = runServerToExit({ DATA_DIR: dataDir, SCAN_SUBNETS: `10.231.40.0/24@eth0@${gateway}` });
        assert.equal(run.status, 2, run.stderr);
        assert.match(run.stderr, /configuration error: SCAN_SUBNETS entry 1 .*gateway/);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
