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

export interface WatchStore {
  deviceExists(mac: string): boolean;
  /**
   * The MAC of the device at `ip` (its devLastIP, or its devPrimaryIPv6 in RFC 5952 text): the one
   * present in the last scan, else the one connected last, when an old device kept the address.
   */
  deviceAt(ip: string): string | undefined;
  /** Present devices with devWatchPorts set, with their last IP (the port watch's targets). */
  watchedDevices(): { mac: string; ip: string }[];
  /** Runs `fn` in one IMMEDIATE transaction (the device store's writes inside it join it). */
  transaction<T>(fn: () => T): T;
  /** Every remembered key of a kind, with its value. */
  memory(kind: MemoryKind): Map<string, string>;
  remembered(kind: MemoryKind, key: string): string | undefined;
  /** Sets (value given) or forgets (undefined) one key. Run inside the caller's transaction. */
  remember(kind: MemoryKind, key: string, value: string | undefined): void;
  /** The device's stored open ports and when they were scanned (null: never). */
  ports(mac: string): { scannedAt: string | null; ports: StoredPort[] };
  /**
   * Replaces the device's open ports with a scan's and says what changed; undefined when the
   * device no longer exists (deleted while it was scanned): nothing is written.
   */
  writePorts(mac: string, ports: readonly OpenPort[], now: Date): PortDiff | undefined;
}
