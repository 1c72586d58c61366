import type { PlannedEvent } from '../devices/presence.js';
import type { NotifyRequest } from './outbox.js';

/**
 * The security watch's tables: DevicePorts (each watched device's open ports, as the last port
 * watch found them) and WatchMemory (what the watch remembers between runs: the IP conflicts that
 * persist, the MAC each gateway answered with, when each device's ports were last scanned).
 * Storage-neutral: the SQLite implementation is sqlite/watch.ts.
 */

/** One open port as a scan reports it (already validated and cleaned by the parser). */
export interface OpenPort {
  readonly port: number;
  readonly protocol: 'tcp' | 'udp';
  readonly service: string;
  readonly product: string;
  readonly version: string;
}

/** A stored open port. */
export interface StoredPort extends OpenPort {
  /** ISO 8601 with Z. */
  readonly firstSeen: string;
  readonly lastSeen: string;
}

/** What WatchMemory remembers, one kind per concept. */
export type MemoryKind = 'conflict' | 'gateway' | 'ports-scanned' | 'rogue-dhcp';

/** What one port scan changed. */
export interface PortDiff {
  /** False on the device's first scan: its ports are recorded without an event. */
  readonly hadPreviousScan: boolean;
  readonly opened: readonly OpenPort[];
  readonly closed: readonly OpenPort[];
}

/** A WatchMemory key set (value given) or forgotten (undefined). */
export interface MemoryWrite {
  readonly kind: MemoryKind;
  readonly key: string;
  readonly value: string | undefined;
}

/** One device's port scan. */
export interface PortScan {
  readonly mac: string;
  readonly ports: readonly OpenPort[];
}

/** What a port watch writes with its scans: its events and their notifications. */
export interface PortEvents {
  readonly events: readonly PlannedEvent[];
  readonly notify?: NotifyRequest;
}

export interface WatchStore {
  deviceExists(mac: string): Promise<boolean>;
  /**
   * The MAC of the device at `ip` (its devLastIP, or its devPrimaryIPv6 in RFC 5952 text): the one
   * present in the last scan, else the one connected last, when an old device kept the address.
   */
  deviceAt(ip: string): Promise<string | undefined>;
  /** Present devices with devWatchPorts set, with their last IP (the port watch's targets). */
  watchedDevices(): Promise<{ mac: string; ip: string }[]>;
  /** Every remembered key of a kind, with its value. */
  memory(kind: MemoryKind): Promise<Map<string, string>>;
  /** The device's stored open ports and when they were scanned (null: never). */
  ports(mac: string): Promise<{ scannedAt: string | null; ports: StoredPort[] }>;
  /**
   * Replaces each scanned device's open ports with its scan's, and writes the events `plan` makes
   * of what changed, in one durable write. A device deleted while it was scanned is left out
   * (nothing written for it). `plan` is pure: it runs inside the write.
   */
  recordPortScans(
    scans: readonly PortScan[],
    now: Date,
    plan: (diffs: ReadonlyMap<string, PortDiff>) => PortEvents,
  ): Promise<readonly PlannedEvent[]>;
}
