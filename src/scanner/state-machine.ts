/**
 * The presence state machine, as pure logic: previous state + one cycle's observations + the
 * grace setting + the time -> a plan of row changes. No I/O, so every transition is tested as a
 * table; `store.ts` applies a plan in one transaction.
 *
 * Decisions (also in docs/api/scanning.md):
 * - Scope: a cycle judges only the devices it could have seen, those whose devLastIP
 *   lies inside one of its subnets. A device outside every scanned subnet (imported from another
 *   network, created by hand with another address) that is not seen is left exactly as it is: no
 *   miss counted, no Disconnected or Device Down, its session untouched. Seen, it is handled like
 *   any other device (it is on a scanned subnet now).
 * - Grace: a present device that is missed only counts as gone on its N-th consecutive miss
 *   (N = its devMissesBeforeAbsent, or SCAN_MISSES_BEFORE_ABSENT when that is 0); being seen again
 *   resets the count. While it is within grace it stays present and its session stays open.
 *   Misses are not counted for absent devices.
 * - Sleeping: for a device with devCanSleep the window replaces the count: unseen, it stays present
 *   (sleeping) while less than SLEEP_MINUTES have passed since its last sighting
 *   (devLastConnection), however many cycles that is, and counts as gone on the first cycle after.
 *   With no recorded sighting the count applies.
 * - Flapping: a device flaps while its Connected/Disconnected/Device Down/Down Reconnected events
 *   within FLAP_WINDOW_MINUTES (those stored before the cycle, counted by the store, plus the
 *   cycle's own) reach FLAP_THRESHOLD. The cycle in which it starts to flap writes one `Flapping`
 *   event (after the event that reached the threshold, notified like Device Down); the flag is kept
 *   in the scanner's memory and re-evaluated every cycle for the devices in scope. Down Reconnected
 *   counts as a return: a device with devAlertDown comes back with it, not with Connected.
 * - IP Changed keeps the open session (as NetAlertX does): the device never left. The session
 *   keeps the IP it connected with; the event records the previous IP in eve_AdditionalInfo.
 * - A MAC answering for several addresses (one subnet or two) is one observation. Its IP is the
 *   device's current devLastIP when that is among them (no IP Changed flapping), else the
 *   numerically lowest address.
 * - devScan = 0: the device is left alone entirely (no fields, no events, no miss counting).
 * - Archived devices (devIsArchived = 1) record no events and open no sessions, but their presence
 *   fields (devPresentLastScan, devLastConnection, devLastIP, the miss count) keep following the
 *   network so that status is right if they are unarchived. An archived device that goes absent
 *   has any open session it had from before archiving closed (without an event), so presence
 *   hours stop counting.
 * - IPv6 (SCAN_IPV6): a MAC the neighbour tables name is a sighting like any other; an IPv6-only
 *   device is created with devLastIP '' and its events and sessions carry its IPv6 address.
 *   devPrimaryIPv6 follows the addresses seen (global, else unique-local, else link-local) and is
 *   left as it is in a cycle that names none. A device with no devLastIP is in scope when its
 *   devPrimaryIPv6 is (the scanner's scope holds the IPv6 prefixes of the tables it read).
 * - The vendor of a known device is filled in only when its devVendor is empty (an operator's
 *   correction is never overwritten).
 */
import { variables } from '../config.js';
import { defaultDeviceJson } from '../devices/catalogue.js';
import type {
  AbsenceEvent,
  KnownDevice,
  NewDeviceJson,
  PlannedEvent,
  PlannedSessionClose,
  PlannedSessionOpen,
  PresenceChanges,
  PresenceUpdate,
  ScanStateRow,
} from '../devices/presence.js';
import type { Observation } from './discovery.js';
import { primaryIpv6 } from './ipv6.js';

export type {
  AbsenceEvent,
  EventType,
  KnownDevice,
  NewDeviceJson,
  PlannedEvent,
  PlannedSessionClose,
  PlannedSessionOpen,
  PresenceUpdate,
  ScanStateRow,
} from '../devices/presence.js';

export interface ScanPlan extends PresenceChanges {
  readonly counts: {
    readonly seen: number;
    readonly newDevices: number;
    readonly connected: number;
    readonly disconnected: number;
    readonly ipChanged: number;
    /** Devices kept present by their sleep window this cycle. */
    readonly sleeping: number;
    /** Devices that started to flap this cycle (Flapping events). */
    readonly flapping: number;
  };
}

export interface PlanInput {
  readonly known: ReadonlyMap<string, KnownDevice>;
  readonly observations: ReadonlyMap<string, Observation>;
  /** SCAN_MISSES_BEFORE_ABSENT (>= 1): the grace of devices whose devMissesBeforeAbsent is 0. */
  readonly missesBeforeAbsent: number;
  /**
   * The cycle's scope: whether an address lies inside one of the cycle's subnets (subnetScope in
   * subnets.ts). Default: every address (for callers that plan without subnets: benches, tests).
   */
  readonly inScope?: (ip: string) => boolean;
  /** SLEEP_MINUTES; default the variable's default. */
  readonly sleepMinutes?: number;
  /** FLAP_THRESHOLD; default the variable's default. */
  readonly flapThreshold?: number;
  /** FLAP_WINDOW_MINUTES, for the Flapping event's text; default the variable's default. */
  readonly flapWindowMinutes?: number;
  readonly now: Date;
}

/** The IP recorded for an observation (see the decision above). */
export function chooseIp(observation: Observation, currentIp: string): string {
  if (currentIp !== '' && observation.ips.includes(currentIp)) return currentIp;
  return observation.ips[0] ?? '';
}

/** The address a device is judged by: its devLastIP, or for an IPv6-only device its IPv6 one. */
function scopeAddress(device: KnownDevice): string {
  return device.lastIP !== '' ? device.lastIP : device.primaryIPv6;
}

/** What the cycle decided for a known device's memory, before flapping is evaluated. */
interface Judged {
  readonly device: KnownDevice;
  misses: number;
  lastAbsence: AbsenceEvent | null;
  /** The cycle wrote a Connected/Disconnected/Device Down/Down Reconnected event for it. */
  toggled: boolean;
  /** The IP it has after the cycle. */
  ip: string;
}

export function planCycle(input: PlanInput): ScanPlan {
  // Stored times have whole seconds: the plan's times are what will be read back.
  const now = new Date(Math.floor(input.now.getTime() / 1000) * 1000);
  const nowIso = now.toISOString().replace('.000Z', 'Z');
  const grace = Math.max(1, input.missesBeforeAbsent);
  const inScope = input.inScope ?? (() => true);
  const sleepMs = (input.sleepMinutes ?? Number(variables.SLEEP_MINUTES.default)) * 60_000;
  const flapThreshold = input.flapThreshold ?? Number(variables.FLAP_THRESHOLD.default);
  const flapWindow = input.flapWindowMinutes ?? Number(variables.FLAP_WINDOW_MINUTES.default);
  const plan = {
    newDevices: [] as NewDeviceJson[],
    updates: [] as PresenceUpdate[],
    events: [] as PlannedEvent[],
    openSessions: [] as PlannedSessionOpen[],
    closeSessions: [] as PlannedSessionClose[],
    scanState: [] as ScanStateRow[],
  };
  const counts = {
    seen: input.observations.size,
    newDevices: 0,
    connected: 0,
    disconnected: 0,
    ipChanged: 0,
    sleeping: 0,
    flapping: 0,
  };
  const judged: Judged[] = [];

  // Observed MACs: new devices, or known ones seen.
  for (const [mac, observation] of input.observations) {
    const device = input.known.get(mac);
    const v6 = primaryIpv6(observation.ipv6 ?? []);
    if (device === undefined) {
      const lastIP = chooseIp(observation, '');
      const ip = lastIP !== '' ? lastIP : v6;
      plan.newDevices.push({
        ...defaultDeviceJson(),
        devMac: mac,
        devVendor: observation.vendor,
        devLastIP: lastIP,
        devPrimaryIPv6: v6,
        devFirstConnection: nowIso,
        devLastConnection: nowIso,
        devPresentLastScan: 1,
        devIsNew: 1,
        devSourcePlugin: observation.source,
      });
      plan.events.push({ mac, ip, type: 'New Device', dateTime: now, additionalInfo: '', pendingAlert: 1 });
      plan.openSessions.push({ mac, ip, eventType: 'New Device', dateTime: now });
      plan.scanState.push({ mac, misses: 0, lastAbsence: null, flapping: 0 });
      counts.newDevices++;
      continue;
    }
    if (!device.scan) continue;
    // An IPv6-only sighting keeps the IPv4 address the device had; events then carry the IPv6 one.
    const lastIP = observation.ips.length > 0 ? chooseIp(observation, device.lastIP) : device.lastIP;
    const primaryIPv6 = v6 !== '' ? v6 : device.primaryIPv6;
    const ip = observation.ips.length > 0 || lastIP !== '' ? lastIP : primaryIPv6;
    const record = !device.archived;
    const entry: Judged = { device, misses: 0, lastAbsence: null, toggled: false, ip };
    judged.push(entry);
    if (!device.presentLastScan) {
      const type = device.lastAbsence === 'Device Down' ? 'Down Reconnected' : 'Connected';
      if (record) {
        plan.events.push({
          mac,
          ip,
          type,
          dateTime: now,
          additionalInfo: '',
          pendingAlert: type === 'Down Reconnected' || device.alertEvents ? 1 : 0,
        });
        plan.openSessions.push({ mac, ip, eventType: type, dateTime: now });
        entry.toggled = true;
        counts.connected++;
      }
    } else if (device.lastIP !== lastIP && record) {
      plan.events.push({
        mac,
        ip,
        type: 'IP Changed',
        dateTime: now,
        additionalInfo: `Previous IP: ${device.lastIP}`,
        pendingAlert: device.alertEvents ? 1 : 0,
      });
      counts.ipChanged++;
    }
    plan.updates.push({
      mac,
      presentLastScan: 1,
      lastIP,
      lastConnection: now,
      vendor: device.vendor === '' && observation.vendor !== '' ? observation.vendor : null,
      primaryIPv6: primaryIPv6 !== device.primaryIPv6 ? primaryIPv6 : null,
    });
  }

  // Known, watched devices in scope that were not seen. A device outside the cycle's subnets
  // could not have been seen: it is not judged at all. Absent ones only have their flapping
  // re-evaluated; present ones count the miss and, past their grace or sleep window, are gone.
  for (const device of input.known.values()) {
    const address = scopeAddress(device);
    if (!device.scan || input.observations.has(device.mac) || !inScope(address)) continue;
    const entry: Judged = {
      device,
      misses: device.misses,
      lastAbsence: device.lastAbsence,
      toggled: false,
      ip: address,
    };
    judged.push(entry);
    if (!device.presentLastScan) continue;
    const misses = device.misses + 1;
    entry.misses = misses;
    // With no recorded sighting a sleeper has no window: the count applies.
    const lastSeen = device.canSleep ? device.lastConnection : null;
    const sleeps = lastSeen !== null;
    const stillPresent =
      lastSeen !== null
        ? now.getTime() - lastSeen.getTime() < sleepMs
        : misses < (device.missesBeforeAbsent > 0 ? device.missesBeforeAbsent : grace);
    if (stillPresent) {
      if (sleeps) counts.sleeping++;
      continue;
    }
    const type: AbsenceEvent = device.alertDown ? 'Device Down' : 'Disconnected';
    plan.updates.push({
      mac: device.mac,
      presentLastScan: 0,
      lastIP: device.lastIP,
      lastConnection: null,
      vendor: null,
      primaryIPv6: null,
    });
    if (device.archived) {
      plan.closeSessions.push({ mac: device.mac, eventType: '', dateTime: now });
      continue;
    }
    plan.events.push({
      mac: device.mac,
      ip: address,
      type,
      dateTime: now,
      additionalInfo: '',
      pendingAlert: type === 'Device Down' || device.alertEvents ? 1 : 0,
    });
    plan.closeSessions.push({ mac: device.mac, eventType: type, dateTime: now });
    entry.lastAbsence = type;
    entry.toggled = true;
    counts.disconnected++;
  }

  // The scanner's memory of every judged device, written only where it changes; flapping is
  // decided here, with this cycle's own toggle counted.
  for (const entry of judged) {
    const { device } = entry;
    const changes = device.recentToggles + (entry.toggled ? 1 : 0);
    const flapping = changes >= flapThreshold;
    if (flapping && !device.flapping && !device.archived) {
      plan.events.push({
        mac: device.mac,
        ip: entry.ip,
        type: 'Flapping',
        dateTime: now,
        additionalInfo: `${changes} changes within ${flapWindow} minutes`,
        pendingAlert: device.alertDown ? 1 : 0,
      });
      counts.flapping++;
    }
    if (
      entry.misses !== device.misses ||
      entry.lastAbsence !== device.lastAbsence ||
      flapping !== device.flapping
    )
      plan.scanState.push({
        mac: device.mac,
        misses: entry.misses,
        lastAbsence: entry.lastAbsence,
        flapping: flapping ? 1 : 0,
      });
  }
  return { ...plan, counts };
}
