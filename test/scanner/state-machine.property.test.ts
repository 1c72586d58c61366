/**
 * The presence state machine by property (fast-check): any sequence of cycles (who is seen, at
 * which address, how much time passes) over devices inside and outside the cycle's scope. The
 * plans are applied to an in-memory copy of what the store remembers, exactly as the store would.
 * - a device outside the cycle's scope that is not seen never changes and is never named by a plan;
 * - every session opened is closed at most once (never two open sessions, never a close of none);
 * - a device with devCanSleep never gets Disconnected or Device Down inside its sleep window, and
 *   stays present (no event at all) while it sleeps.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { Observation } from '../../src/scanner/discovery.js';
import { planCycle, type KnownDevice, type ScanPlan } from '../../src/scanner/state-machine.js';
import { parseScanSubnets, subnetScope } from '../../src/scanner/subnets.js';
import { knownDevice } from './helpers.js';

const inScope = subnetScope(parseScanSubnets('10.0.0.0/24@eth0'));
const inside = ['10.0.0.5', '10.0.0.6', '10.0.0.7'];
const outside = ['192.168.9.5', '172.16.0.1', ''];
const macs = ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03', '02:00:00:00:00:04'];

interface World {
  readonly known: Map<string, KnownDevice>;
  /** Open sessions per MAC (the property: never more than one, never closed when none). */
  readonly open: Map<string, number>;
}

/** Applies a plan to the world as the store does (close before open). */
function apply(world: World, plan: ScanPlan): void {
  for (const d of plan.newDevices) {
    world.known.set(d.devMac, knownDevice({ mac: d.devMac, lastIP: String(d.devLastIP) }));
  }
  for (const u of plan.updates) {
    const device = world.known.get(u.mac);
    assert.ok(device, `update of unknown ${u.mac}`);
    world.known.set(u.mac, {
      ...device,
      presentLastScan: u.presentLastScan === 1,
      lastIP: u.lastIP,
      lastConnection: u.lastConnection ?? device.lastConnection,
    });
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
    world.known.set(s.mac, {
      ...device,
      misses: s.misses,
      lastAbsence: s.lastAbsence,
      flapping: s.flapping === 1,
    });
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
  canSleep: fc.boolean(),
  ownMisses: fc.constantFrom(0, 0, 1, 2, 5),
  /** Minutes before the first cycle that the device was last seen. */
  lastSeen: fc.option(fc.integer({ min: 0, max: 90 }), { nil: null }),
});
/** One cycle: minutes since the previous one, and for each MAC unseen (null) or seen in scope. */
const cycleArb = fc.record({
  minutes: fc.integer({ min: 1, max: 20 }),
  seen: fc.array(fc.option(fc.constantFrom(...inside), { nil: null }), {
    minLength: macs.length,
    maxLength: macs.length,
  }),
});

describe('presence state machine, by property', () => {
  test('out of scope never changes; sessions closed at most once; sleepers never gone inside their window', () => {
    fc.assert(
      fc.property(
        fc.array(deviceArb, { minLength: macs.length, maxLength: macs.length }),
        fc.array(cycleArb, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 5, max: 60 }),
        (devices, cycles, grace, sleepMinutes) => {
          const world: World = { known: new Map(), open: new Map() };
          let clock = Date.UTC(2025, 0, 1);
          devices.forEach((d, i) => {
            const mac = macs[i] ?? '';
            world.known.set(
              mac,
              knownDevice({
                mac,
                lastIP: d.ip,
                presentLastScan: d.present,
                alertDown: d.alertDown,
                archived: d.archived,
                scan: d.scan,
                misses: d.present ? d.misses : 0,
                canSleep: d.canSleep,
                missesBeforeAbsent: d.ownMisses,
                lastConnection: d.lastSeen === null ? null : new Date(clock - d.lastSeen * 60_000),
              }),
            );
            // A present, unarchived device has its session open (as the store would have it).
            world.open.set(mac, d.present && !d.archived ? 1 : 0);
          });
          for (const cycle of cycles) {
            clock += cycle.minutes * 60_000;
            const observations = new Map<string, Observation>();
            cycle.seen.forEach((ip, i) => {
              if (ip !== null) observations.set(macs[i] ?? '', { ips: [ip], vendor: '', source: 'arp-scan' });
            });
            const before = new Map(world.known);
            const plan = planCycle({
              known: world.known,
              observations,
              missesBeforeAbsent: grace,
              inScope,
              sleepMinutes,
              now: new Date(clock),
            });
            for (const device of before.values()) {
              const since = device.lastConnection === null ? null : clock - device.lastConnection.getTime();
              if (!device.canSleep || since === null || since >= sleepMinutes * 60_000) continue;
              const gone = plan.events.filter(
                (e) => e.mac === device.mac && (e.type === 'Disconnected' || e.type === 'Device Down'),
              );
              assert.deepEqual(gone, [], `${device.mac} gone ${since / 60_000} min after its last sighting`);
              if (device.presentLastScan)
                assert.ok(!plan.updates.some((u) => u.mac === device.mac && u.presentLastScan === 0));
            }
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
