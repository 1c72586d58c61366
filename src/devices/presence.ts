/**
 * The vocabulary of presence, shared by the pure state machine (which plans changes) and the device
 * store (which writes them): what the store remembers of a device between scan cycles, and the row
 * changes one cycle makes. Times are Date values; how they are stored is the store's business.
 */
import type { DeviceJson } from './catalogue.js';

import type { EventType } from './history.js';

export type { EventType } from './history.js';

/** The events that count towards flapping (one away or one back each). */
export const toggleEventTypes = ['Connected', 'Disconnected', 'Device Down', 'Down Reconnected'] as const;

/** Why a MAC is an alias of a device (DeviceMacs.dma_Reason). */
export type AliasReason = 'merge' | 'dhcp-client-id' | 'dhcp-hostname';

/** A MAC the scan saw for the first time, linked to an existing device (docs/random-macs.md). */
export interface MacLink {
  readonly mac: string;
  readonly devMac: string;
  readonly reason: 'dhcp-client-id' | 'dhcp-hostname';
  readonly dateTime: Date;
}

/** An alias seen by a cycle (its dma_LastSeen moves). */
export interface AliasSighting {
  readonly mac: string;
  readonly dateTime: Date;
}

/** Why the device is absent, remembered until it comes back (decides Connected vs Down Reconnected). */
export type AbsenceEvent = 'Disconnected' | 'Device Down';

/** What the state machine needs to know of a device already in the store. */
export interface KnownDevice {
  readonly mac: string;
  readonly presentLastScan: boolean;
  readonly alertDown: boolean;
  readonly alertEvents: boolean;
  readonly scan: boolean;
  readonly archived: boolean;
  readonly lastIP: string;
  /** devPrimaryIPv6: '' when none is known. */
  readonly primaryIPv6: string;
  readonly vendor: string;
  /** Consecutive cycles missed while present. */
  readonly misses: number;
  /** How the last absence was recorded; null when present or never absent. */
  readonly lastAbsence: AbsenceEvent | null;
  /** devCanSleep: unseen, it stays present for SLEEP_MINUTES after lastConnection. */
  readonly canSleep: boolean;
  /** devLastConnection: the last sighting; null when never seen. */
  readonly lastConnection: Date | null;
  /** devMissesBeforeAbsent: 0 for the global SCAN_MISSES_BEFORE_ABSENT. */
  readonly missesBeforeAbsent: number;
  /** The flapping flag the previous cycle left (ScanState.flapping). */
  readonly flapping: boolean;
  /** Events of `toggleEventTypes` within the flap window before this cycle (0 when not counted). */
  readonly recentToggles: number;
  /** devSite: where it was seen last; '' for the hub's own site or none (absent: not loaded). */
  readonly site?: string;
}

/** Where a cycle saw a device: devSite and devSyncHubNode, written with the cycle. */
export interface SiteMark {
  readonly mac: string;
  readonly site: string;
  /** The probe's name; '' for the hub's own cycles. */
  readonly node: string;
}

export interface PlannedEvent {
  readonly mac: string;
  readonly ip: string;
  readonly type: EventType;
  readonly dateTime: Date;
  readonly additionalInfo: string;
  readonly pendingAlert: 0 | 1;
}

export interface PlannedSessionOpen {
  readonly mac: string;
  readonly ip: string;
  readonly eventType: 'New Device' | 'Connected' | 'Down Reconnected';
  readonly dateTime: Date;
}

export interface PlannedSessionClose {
  readonly mac: string;
  /** '' when an archived device's session is closed without an event. */
  readonly eventType: 'Disconnected' | 'Device Down' | '';
  readonly dateTime: Date;
}

/** Changes to an existing device: only the presence fields the scanner owns. */
export interface PresenceUpdate {
  readonly mac: string;
  readonly presentLastScan: 0 | 1;
  readonly lastIP: string;
  /** Null leaves devLastConnection as it is. */
  readonly lastConnection: Date | null;
  /** Non-null: set devVendor (only planned when it was empty). */
  readonly vendor: string | null;
  /** Non-null: set devPrimaryIPv6 (planned when the neighbour tables name another one). */
  readonly primaryIPv6: string | null;
}

export interface ScanStateRow {
  readonly mac: string;
  readonly misses: number;
  readonly lastAbsence: AbsenceEvent | null;
  readonly flapping: 0 | 1;
}

/**
 * A name found by automatic naming (src/names) for an existing device. The store writes it only
 * while the device's name is not a user or import name (checked again in the same statement).
 */
export interface NameUpdate {
  readonly mac: string;
  /** Null leaves devName and devNameSource as they are (e.g. only devFQDN changes). */
  readonly name: string | null;
  readonly source: 'dhcp' | 'mdns' | 'netbios' | 'dns' | null;
  /** Non-null: set devFQDN (the reverse DNS answer). */
  readonly fqdn: string | null;
}

/** What naming needs of a stored device: its name, where that came from, its FQDN. */
export interface StoredDeviceName {
  readonly name: string;
  readonly source: string;
  readonly fqdn: string;
  /** devLastIP: where the device's own responders are asked. */
  readonly ip: string;
}

/** A device the scan found first: its MAC is known to be a string. */
export type NewDeviceJson = DeviceJson & { readonly devMac: string };

/** Everything one scan cycle writes, applied by the device store in one transaction. */
export interface PresenceChanges {
  /**
   * Full device objects (JSON form: catalogue defaults + scan values, so that the plan alone says
   * what a new device looks like); the store adds the devGUID.
   */
  readonly newDevices: readonly NewDeviceJson[];
  readonly updates: readonly PresenceUpdate[];
  readonly events: readonly PlannedEvent[];
  readonly openSessions: readonly PlannedSessionOpen[];
  readonly closeSessions: readonly PlannedSessionClose[];
  /** Scanner memory rows that change (written as upserts). */
  readonly scanState: readonly ScanStateRow[];
  /** Names found for existing devices this cycle (src/names); new devices carry theirs. */
  readonly names?: readonly NameUpdate[];
  /** New MACs linked to existing devices this cycle (written before the events). */
  readonly links?: readonly MacLink[];
  /** Aliases seen this cycle. */
  readonly aliasesSeen?: readonly AliasSighting[];
  /** The site and node of the devices seen (probe cycles and a hub's own); new devices carry theirs. */
  readonly sites?: readonly SiteMark[];
}
