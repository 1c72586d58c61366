import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultDeviceJson } from '../../src/devices/catalogue.js';
import type { Observation } from '../../src/scanner/discovery.js';
import { chooseIp, planCycle, type KnownDevice, type ScanPlan } from '../../src/scanner/state-machine.js';
import { parseScanSubnets, subnetScope } from '../../src/scanner/subnets.js';
import { dbTime } from '../../src/time.js';
import { knownDevice } from './helpers.js';

const mac = 'aa:bb:cc:00:00:01';
const now = new Date('2025-03-01T12:00:00.000Z');
const t = '2025-03-01 12:00:00';
const minutesAgo = (minutes: number): Date => new Date(now.getTime() - minutes * 60_000);

function device(overrides: Partial<KnownDevice> = {}): KnownDevice {
  return knownDevice({ mac, lastIP: '10.0.0.5', vendor: 'Acme', ...overrides });
}

function seen(ips: string[], vendor = 'Acme'): Observation {
  return { ips, vendor, source: 'arp-scan' };
}

/** The plan reduced to what a row of the table states. */
/** `flapRows`: show each memory row's flapping flag (the rows about flapping). */
function summary(plan: ScanPlan, flapRows = false): unknown {
  return {
    events: plan.events.map((e) => [e.type, e.ip, e.additionalInfo, e.pendingAlert]),
    open: plan.openSessions.map((o) => [o.eventType, o.ip]),
    close: plan.closeSessions.map((c) => c.eventType),
    update: plan.updates.map((u) => [
      u.presentLastScan,
      u.lastIP,
      u.lastConnection === null ? null : dbTime(u.lastConnection),
      u.vendor,
    ]),
    state: plan.scanState.map((s) =>
      flapRows || s.flapping === 1 ? [s.misses, s.lastAbsence, s.flapping] : [s.misses, s.lastAbsence],
    ),
  };
}

interface Row {
  readonly name: string;
  readonly known?: KnownDevice;
  readonly observation?: Observation;
  readonly grace?: number;
  /** The cycle's scope; default: every address. */
  readonly inScope?: (ip: string) => boolean;
  readonly expect: {
    events?: unknown[];
    open?: unknown[];
    close?: unknown[];
    update?: unknown[];
    state?: unknown[];
  };
}

const table: Row[] = [
  {
    name: 'present and seen at the same IP: last connection refreshed, nothing else',
    known: device(),
    observation: seen(['10.0.0.5']),
    expect: { update: [[1, '10.0.0.5', t, null]] },
  },
  {
    name: 'absent (Disconnected) and seen: Connected + new open session',
    known: device({ presentLastScan: false, lastAbsence: 'Disconnected', misses: 1 }),
    observation: seen(['10.0.0.5']),
    expect: {
      events: [['Connected', '10.0.0.5', '', 1]],
      open: [['Connected', '10.0.0.5']],
      update: [[1, '10.0.0.5', t, null]],
      state: [[0, null]],
    },
  },
  {
    name: 'absent after a Device Down and seen: Down Reconnected, alerted even with alerts now off',
    known: device({
      presentLastScan: false,
      alertDown: false,
      alertEvents: false,
      lastAbsence: 'Device Down',
      misses: 1,
    }),
    observation: seen(['10.0.0.5']),
    expect: {
      events: [['Down Reconnected', '10.0.0.5', '', 1]],
      open: [['Down Reconnected', '10.0.0.5']],
      update: [[1, '10.0.0.5', t, null]],
      state: [[0, null]],
    },
  },
  {
    name: 'absent, never recorded why (e.g. created by the API) and seen: Connected',
    known: device({ presentLastScan: false, alertEvents: false }),
    observation: seen(['10.0.0.5']),
    expect: {
      events: [['Connected', '10.0.0.5', '', 0]],
      open: [['Connected', '10.0.0.5']],
      update: [[1, '10.0.0.5', t, null]],
    },
  },
  {
    name: 'present and missed (grace 1): Disconnected, session closed',
    known: device(),
    expect: {
      events: [['Disconnected', '10.0.0.5', '', 1]],
      close: ['Disconnected'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[1, 'Disconnected']],
    },
  },
  {
    name: 'present, devAlertDown set, missed: Device Down (always alerts)',
    known: device({ alertDown: true, alertEvents: false }),
    expect: {
      events: [['Device Down', '10.0.0.5', '', 1]],
      close: ['Device Down'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[1, 'Device Down']],
    },
  },
  {
    name: 'grace 3, first miss: still present, miss counted',
    known: device(),
    grace: 3,
    expect: { state: [[1, null]] },
  },
  {
    name: 'grace 3, second miss: still present',
    known: device({ misses: 1 }),
    grace: 3,
    expect: { state: [[2, null]] },
  },
  {
    name: 'grace 3, third miss: gone',
    known: device({ misses: 2 }),
    grace: 3,
    expect: {
      events: [['Disconnected', '10.0.0.5', '', 1]],
      close: ['Disconnected'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[3, 'Disconnected']],
    },
  },
  {
    name: 'grace 3, seen again after two misses: misses reset, no event, session kept',
    known: device({ misses: 2 }),
    grace: 3,
    observation: seen(['10.0.0.5']),
    expect: { update: [[1, '10.0.0.5', t, null]], state: [[0, null]] },
  },
  {
    name: 'already absent and missed again: nothing at all (misses are not counted while absent)',
    known: device({ presentLastScan: false, lastAbsence: 'Disconnected', misses: 1 }),
    expect: {},
  },
  {
    name: 'present at a new IP: IP Changed with the previous IP, session continues',
    known: device(),
    observation: seen(['10.0.0.9']),
    expect: {
      events: [['IP Changed', '10.0.0.9', 'Previous IP: 10.0.0.5', 1]],
      update: [[1, '10.0.0.9', t, null]],
    },
  },
  {
    name: 'absent and back at a new IP: Connected at the new IP (no separate IP Changed)',
    known: device({ presentLastScan: false, lastAbsence: 'Disconnected' }),
    observation: seen(['10.0.0.9']),
    expect: {
      events: [['Connected', '10.0.0.9', '', 1]],
      open: [['Connected', '10.0.0.9']],
      update: [[1, '10.0.0.9', t, null]],
      state: [[0, null]],
    },
  },
  {
    name: 'MAC answering for several IPs including its current one: keeps the current IP',
    known: device({ lastIP: '10.0.0.50' }),
    observation: seen(['10.0.0.13', '10.0.0.50']),
    expect: { update: [[1, '10.0.0.50', t, null]] },
  },
  {
    name: 'MAC answering for several IPs, none current: the lowest, as IP Changed',
    known: device({ lastIP: '10.0.0.99' }),
    observation: seen(['10.0.0.13', '10.0.0.50']),
    expect: {
      events: [['IP Changed', '10.0.0.13', 'Previous IP: 10.0.0.99', 1]],
      update: [[1, '10.0.0.13', t, null]],
    },
  },
  {
    name: 'empty vendor is filled from the scan; a set vendor is never overwritten',
    known: device({ vendor: '' }),
    observation: seen(['10.0.0.5'], 'Raspberry Pi Foundation'),
    expect: { update: [[1, '10.0.0.5', t, 'Raspberry Pi Foundation']] },
  },
  {
    name: 'devScan = 0 and seen: left alone entirely',
    known: device({ scan: false, presentLastScan: false }),
    observation: seen(['10.0.0.9']),
    expect: {},
  },
  {
    name: 'devScan = 0 and missed while marked present: left alone entirely',
    known: device({ scan: false }),
    expect: {},
  },
  {
    name: 'archived, absent and seen: presence fields follow, no event, no session',
    known: device({ archived: true, presentLastScan: false }),
    observation: seen(['10.0.0.5']),
    expect: { update: [[1, '10.0.0.5', t, null]] },
  },
  {
    name: 'archived, present at a new IP: IP updated without an event',
    known: device({ archived: true }),
    observation: seen(['10.0.0.9']),
    expect: { update: [[1, '10.0.0.9', t, null]] },
  },
  {
    name: 'devMissesBeforeAbsent 3 with the global 1, first miss: still present',
    known: device({ missesBeforeAbsent: 3 }),
    expect: { state: [[1, null]] },
  },
  {
    name: 'devMissesBeforeAbsent 3, third miss: gone',
    known: device({ missesBeforeAbsent: 3, misses: 2 }),
    expect: {
      events: [['Disconnected', '10.0.0.5', '', 1]],
      close: ['Disconnected'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[3, 'Disconnected']],
    },
  },
  {
    name: 'devMissesBeforeAbsent 1 with the global 3, first miss: gone',
    known: device({ missesBeforeAbsent: 1 }),
    grace: 3,
    expect: {
      events: [['Disconnected', '10.0.0.5', '', 1]],
      close: ['Disconnected'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[1, 'Disconnected']],
    },
  },
  {
    name: 'devCanSleep, last seen 29 minutes ago (window 30), fifth miss: sleeping, still present',
    known: device({ canSleep: true, alertDown: true, misses: 4, lastConnection: minutesAgo(29) }),
    expect: { state: [[5, null]] },
  },
  {
    name: 'devCanSleep, last seen 30 minutes ago, first miss: the window replaces the count: Device Down',
    known: device({ canSleep: true, alertDown: true, missesBeforeAbsent: 5, lastConnection: minutesAgo(30) }),
    expect: {
      events: [['Device Down', '10.0.0.5', '', 1]],
      close: ['Device Down'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[1, 'Device Down']],
    },
  },
  {
    name: 'devCanSleep, never seen (no last connection): the count applies',
    known: device({ canSleep: true, lastConnection: null }),
    expect: {
      events: [['Disconnected', '10.0.0.5', '', 1]],
      close: ['Disconnected'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[1, 'Disconnected']],
    },
  },
  {
    name: 'devCanSleep, sleeping and seen again: awake, no event, session continues, misses reset',
    known: device({ canSleep: true, misses: 3, lastConnection: minutesAgo(15) }),
    observation: seen(['10.0.0.5']),
    expect: { update: [[1, '10.0.0.5', t, null]], state: [[0, null]] },
  },
  {
    name: 'five changes in the window, a sixth now (Connected): Flapping after it, notified like Down',
    known: device({ presentLastScan: false, alertDown: true, lastAbsence: 'Device Down', recentToggles: 5 }),
    observation: seen(['10.0.0.5']),
    expect: {
      events: [
        ['Down Reconnected', '10.0.0.5', '', 1],
        ['Flapping', '10.0.0.5', '6 changes within 60 minutes', 1],
      ],
      open: [['Down Reconnected', '10.0.0.5']],
      update: [[1, '10.0.0.5', t, null]],
      state: [[0, null, 1]],
    },
  },
  {
    name: 'already flapping, another change: no second Flapping event',
    known: device({ flapping: true, recentToggles: 8, alertDown: false }),
    expect: {
      events: [['Disconnected', '10.0.0.5', '', 1]],
      close: ['Disconnected'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[1, 'Disconnected', 1]],
    },
  },
  {
    name: 'flapping, the window emptied, absent and missed: the flag clears, no event',
    known: device({ presentLastScan: false, flapping: true, recentToggles: 2, lastAbsence: 'Disconnected' }),
    expect: { state: [[0, 'Disconnected', 0]] },
  },
  {
    name: 'flapping with devAlertDown 0: the Flapping event is not pending an alert',
    known: device({ recentToggles: 5 }),
    expect: {
      events: [
        ['Disconnected', '10.0.0.5', '', 1],
        ['Flapping', '10.0.0.5', '6 changes within 60 minutes', 0],
      ],
      close: ['Disconnected'],
      update: [[0, '10.0.0.5', null, null]],
      state: [[1, 'Disconnected', 1]],
    },
  },
  {
    name: 'out of scope (another network), present and missed: nothing at all',
    known: device({ lastIP: '192.168.7.20', alertDown: true }),
    inScope: subnetScope(parseScanSubnets('10.0.0.0/24@eth0')),
    expect: {},
  },
  {
    name: 'out of scope, in grace (misses 1 of 3) and missed: the count is not advanced',
    known: device({ lastIP: '192.168.7.20', misses: 1 }),
    grace: 3,
    inScope: subnetScope(parseScanSubnets('10.0.0.0/24@eth0')),
    expect: {},
  },
  {
    name: 'no address at all (created by hand) and missed: out of every scope, nothing',
    known: device({ lastIP: '' }),
    inScope: subnetScope(parseScanSubnets('10.0.0.0/24@eth0')),
    expect: {},
  },
  {
    name: 'out of scope by its last address but seen on a scanned subnet: judged, IP Changed',
    known: device({ lastIP: '192.168.7.20' }),
    observation: seen(['10.0.0.9']),
    inScope: subnetScope(parseScanSubnets('10.0.0.0/24@eth0')),
    expect: {
      events: [['IP Changed', '10.0.0.9', 'Previous IP: 192.168.7.20', 1]],
      update: [[1, '10.0.0.9', t, null]],
    },
  },
  {
    name: 'in scope of the second of two subnets, missed: Disconnected',
    known: device({ lastIP: '10.9.0.1' }),
    inScope: subnetScope(parseScanSubnets('10.0.0.0/24@eth0,10.9.0.0/16@eth1')),
    expect: {
      events: [['Disconnected', '10.9.0.1', '', 1]],
      close: ['Disconnected'],
      update: [[0, '10.9.0.1', null, null]],
      state: [[1, 'Disconnected']],
    },
  },
  {
    name: 'archived, present and missed: absent, old session closed without an event',
    known: device({ archived: true, alertDown: true }),
    expect: { close: [''], update: [[0, '10.0.0.5', null, null]], state: [[1, null]] },
  },
];

describe('presence state machine: one device, every transition', () => {
  for (const row of table) {
    test(row.name, () => {
      const plan = planCycle({
        known: new Map(row.known ? [[mac, row.known]] : []),
        observations: new Map(row.observation ? [[mac, row.observation]] : []),
        missesBeforeAbsent: row.grace ?? 1,
        inScope: row.inScope,
        now,
      });
      assert.deepEqual(plan.newDevices, []);
      assert.deepEqual(summary(plan, row.known?.flapping === true), {
        events: row.expect.events ?? [],
        open: row.expect.open ?? [],
        close: row.expect.close ?? [],
        update: row.expect.update ?? [],
        state: row.expect.state ?? [],
      });
    });
  }
});

describe('presence state machine: new devices and whole cycles', () => {
  test('an unknown MAC becomes a new device: catalogue defaults, New Device event, session opened at it', () => {
    const plan = planCycle({
      known: new Map(),
      observations: new Map([[mac, seen(['10.0.0.7', '10.0.0.20'], 'VMware, Inc.')]]),
      missesBeforeAbsent: 1,
      now,
    });
    assert.deepEqual(plan.newDevices, [
      {
        ...defaultDeviceJson(),
        devMac: mac,
        devVendor: 'VMware, Inc.',
        devLastIP: '10.0.0.7',
        devFirstConnection: '2025-03-01T12:00:00Z',
        devLastConnection: '2025-03-01T12:00:00Z',
        devPresentLastScan: 1,
        devIsNew: 1,
        devSourcePlugin: 'arp-scan',
      },
    ]);
    assert.deepEqual(summary(plan), {
      events: [['New Device', '10.0.0.7', '', 1]],
      open: [['New Device', '10.0.0.7']],
      close: [],
      update: [],
      state: [[0, null]],
    });
    assert.equal(plan.events[0]?.dateTime, plan.openSessions[0]?.dateTime);
    assert.equal(plan.counts.newDevices, 1);
  });

  test('a mixed cycle: counts and one entry per device', () => {
    const known = new Map<string, KnownDevice>([
      ['00:00:00:00:00:01', device({ mac: '00:00:00:00:00:01' })],
      ['00:00:00:00:00:02', device({ mac: '00:00:00:00:00:02', presentLastScan: false })],
      ['00:00:00:00:00:03', device({ mac: '00:00:00:00:00:03' })],
      ['00:00:00:00:00:04', device({ mac: '00:00:00:00:00:04', scan: false })],
    ]);
    const observations = new Map<string, Observation>([
      ['00:00:00:00:00:01', seen(['10.0.0.5'])],
      ['00:00:00:00:00:02', seen(['10.0.0.5'])],
      ['00:00:00:00:00:05', seen(['10.0.0.6'])],
      ['00:00:00:00:00:04', seen(['10.0.0.8'])],
    ]);
    const plan = planCycle({ known, observations, missesBeforeAbsent: 1, now });
    assert.deepEqual(plan.counts, {
      seen: 4,
      newDevices: 1,
      connected: 1,
      disconnected: 1,
      ipChanged: 0,
      sleeping: 0,
      flapping: 0,
    });
    assert.deepEqual(
      plan.events.map((e) => [e.mac, e.type]),
      [
        ['00:00:00:00:00:02', 'Connected'],
        ['00:00:00:00:00:05', 'New Device'],
        ['00:00:00:00:00:03', 'Disconnected'],
      ],
    );
  });

  test('chooseIp: current IP when among the addresses, else the first (lowest)', () => {
    assert.equal(chooseIp(seen(['10.0.0.2', '10.0.0.3']), '10.0.0.3'), '10.0.0.3');
    assert.equal(chooseIp(seen(['10.0.0.2', '10.0.0.3']), '10.0.0.4'), '10.0.0.2');
    assert.equal(chooseIp(seen(['10.0.0.2']), ''), '10.0.0.2');
  });
});
