/**
 * The presence state machine by property (fast-check): any sequence of cycles (who is seen, at
 * which address, how much time passes) over devices inside and outside the cycle's scope. The
 * plans are applied to an in-memory copy of what the store remembers, exactly as the store would.
 * - a device outside the cycle's scope that is not seen never changes and is never named by a plan;
 * - every session opened is closed at most once (never two open sessions, never a close of none).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Observation } from '../../src/scanner/discovery.js';
import { planCycle, type KnownDevice, type ScanPlan } from '../../src/scanner/state-machine.js';
import { parseScanSubnets, subnetScope } from '../../src/scanner/subnets.js';

const inScope = subnetScope(parseScanSubnets('10.0.0.0/24@eth0'));
const inside = ['10.0.0.5', '10.0.0.6', '10.0.0.7'];
const outside = ['192.168.9.5', '172.16.0.1', ''];
const macs = ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03', '02:00:00:00:00:04'];

interface World {
  readonly known: Map<string, KnownDevice>;
  /** Open sessions per MAC (the property: never more than one, never closed when none). */
  readonly open: Map<string, number>;
}

function knownDevice(mac: string, lastIP: string, flags: Partial<KnownDevice>): KnownDevice {
  return {
    mac,
    presentLastScan: true,
    alertDown: false,
    alertEvents: true,
    scan: true,
    archived: false,
    lastIP,
    vendor: '',
    misses: 0,
    lastAbsence: null,
    ...flags,
  };
}

/** Applies a plan to the world as the store does (close before open). */
function apply(world: World, plan: ScanPlan): void {
  for (const d of plan.newDevices) {
    world.known.set(d.devMac, knownDevice(d.devMac, String(d.devLastIP), {}));
  }
  for (const u of plan.updates) {
    const device = world.known.get(u.mac);
    assert.ok(device, `update of unknown ${u.mac}`);
    world.known.set(u.mac, { ...device, presentLastScan: u.presentLastScan === 1, lastIP: u.lastIP });
  }
  for (const c of plan.closeSessions) {
    const open = world.open.get(c.mac) ?? 0;
    // An archived device's close may find no session (it was archived while absent): a no-op.
    if (c.eventType !== '') assert.equal(open, 1, `close of ${c.mac} without one open session`);
    world.open.set(c.mac, 0);
  }
  for (const o of plan.openSessions) {
    assert.equal(world.open.get(o.mac) ?? 0, 0, `second open session for ${o.mac}`);
    world.open.set(o.mac, 1);
  }
  for (const s of plan.scanState) {
    const device = world.known.get(s.mac);
    assert.ok(device);
    world.known.set(s.mac, { ...device, misses: s.misses, lastAbsence: s.lastAbsence });
  }
}

function namedBy(plan: ScanPlan, mac: string): boolean {
  return [
    plan.newDevices.map((d) => d.devMac),
    plan.updates,
    plan.events,
    plan.openSessions,
    plan.closeSessions,
    plan.scanState,
  ]
    .flat()
    .some((entry) => (typeof entry === 'string' ? entry === mac : entry.mac === mac));
}

const deviceArb = fc.record({
  ip: fc.constantFrom(...inside, ...outside),
  present: fc.boolean(),
  alertDown: fc.boolean(),
  archived: fc.boolean(),
  scan: fc.boolean(),
  misses: fc.integer({ min: 0, max: 3 }),
});
/** One cycle: for each MAC, unseen (null) or seen at an address inside the scope. */
const cycleArb = fc.array(fc.option(fc.constantFrom(...inside), { nil: null }), {
  minLength: macs.length,
  maxLength: macs.length,
});

describe('presence state machine, by property', () => {
  test('out-of-scope devices never change; every session opened is closed at most once', () => {
    fc.assert(
      fc.property(
        fc.array(deviceArb, { minLength: macs.length, maxLength: macs.length }),
        fc.array(cycleArb, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 3 }),
        (devices, cycles, grace) => {
          const world: World = { known: new Map(), open: new Map() };
          devices.forEach((d, i) => {
            const mac = macs[i] ?? '';
            world.known.set(
              mac,
              knownDevice(mac, d.ip, {
                presentLastScan: d.present,
                alertDown: d.alertDown,
                archived: d.archived,
                scan: d.scan,
                misses: d.present ? d.misses : 0,
              }),
            );
            // A present, unarchived device has its session open (as the store would have it).
            world.open.set(mac, d.present && !d.archived ? 1 : 0);
          });
          let clock = Date.UTC(2025, 0, 1);
          for (const cycle of cycles) {
            clock += 300_000;
            const observations = new Map<string, Observation>();
            cycle.forEach((ip, i) => {
              if (ip !== null) observations.set(macs[i] ?? '', { ips: [ip], vendor: '', source: 'arp-scan' });
            });
            const before = new Map(world.known);
            const plan = planCycle({
              known: world.known,
              observations,
              missesBeforeAbsent: grace,
              inScope,
              now: new Date(clock),
            });
            for (const [mac, device] of before) {
              if (observations.has(mac) || inScope(device.lastIP)) continue;
              assert.equal(namedBy(plan, mac), false, `out-of-scope ${mac} named by the plan`);
            }
            apply(world, plan);
            for (const [mac, device] of before) {
              if (observations.has(mac) || inScope(device.lastIP)) continue;
              assert.deepEqual(world.known.get(mac), device);
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
