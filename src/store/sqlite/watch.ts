/**
 * The security watch's tables: DevicePorts (each watched device's open ports, as the last port
 * watch found them) and WatchMemory (what the watch remembers between runs: the IP conflicts that
 * persist, the MAC each gateway answered with, when each device's ports were last scanned). Every
 * SQL text over them is here, beside the device store, so that one module owns them; the device
 * store runs `watchSql.deleteDevice*` in its delete transaction (a deleted device loses its ports).
 *
 * Statements are prepared once; every value is a bound parameter.
 */
import type { Database, Statement } from 'better-sqlite3';
import { dbTime, fromDbTime } from '../../time.js';
import type { PlannedEvent } from '../../devices/presence.js';
import type {
  MemoryKind,
  OpenPort,
  PortDiff,
  PortEvents,
  PortScan,
  StoredPort,
  WatchStore,
} from '../watch.js';
import { applyCycle, settled } from './device-store.js';
import type { SqliteDevices } from './devices.js';
import type { SqliteOutboxStore } from './outbox.js';

/** The statements the device store runs when a device is deleted. */
export const watchSql = {
  deleteDevicePorts: 'DELETE FROM DevicePorts WHERE dpo_MAC = ?',
  deleteDeviceMemory: "DELETE FROM WatchMemory WHERE wat_Kind = 'ports-scanned' AND wat_Key = ?",
} as const;

/** A DevicePorts row as both stores read it (the PostgreSQL watch store too). */
export interface PortRow {
  dpo_Port: number;
  dpo_Protocol: 'tcp' | 'udp';
  dpo_Service: string;
  dpo_Product: string;
  dpo_Version: string;
  dpo_FirstSeen: string;
  dpo_LastSeen: string;
}

export function openPort(row: PortRow): OpenPort {
  return {
    port: row.dpo_Port,
    protocol: row.dpo_Protocol,
    service: row.dpo_Service,
    product: row.dpo_Product,
    version: row.dpo_Version,
  };
}

export class SqliteWatchStore implements WatchStore {
  private readonly memoryAll: Statement<[MemoryKind], { wat_Key: string; wat_Value: string }>;
  private readonly memoryGet: Statement<[MemoryKind, string], { wat_Value: string }>;
  private readonly memorySet: Statement<[MemoryKind, string, string]>;
  private readonly memoryDelete: Statement<[MemoryKind, string]>;
  private readonly portsOf: Statement<[string], PortRow>;
  private readonly portUpsert: Statement<[string, number, string, string, string, string, string, string]>;
  private readonly portDelete: Statement<[string, number, string]>;
  private readonly existsStmt: Statement<[string], number>;
  private readonly atStmt: Statement<[string, string], string>;
  private readonly watched: Statement<[], { mac: string; ip: string }>;

  /**
   * @param core whose group commit the watch's writes share, and whose cycle writes its events
   * @param outbox where the events' notifications are written
   */
  constructor(
    db: Database,
    private readonly core: SqliteDevices,
    private readonly outbox?: Pick<SqliteOutboxStore, 'writeRequested'>,
  ) {
    this.memoryAll = db.prepare('SELECT wat_Key, wat_Value FROM WatchMemory WHERE wat_Kind = ?');
    this.memoryGet = db.prepare('SELECT wat_Value FROM WatchMemory WHERE wat_Kind = ? AND wat_Key = ?');
    this.memorySet = db.prepare(`
      INSERT INTO WatchMemory (wat_Kind, wat_Key, wat_Value) VALUES (?, ?, ?)
      ON CONFLICT (wat_Kind, wat_Key) DO UPDATE SET wat_Value = excluded.wat_Value`);
    this.memoryDelete = db.prepare('DELETE FROM WatchMemory WHERE wat_Kind = ? AND wat_Key = ?');
    this.portsOf = db.prepare(`
      SELECT dpo_Port, dpo_Protocol, dpo_Service, dpo_Product, dpo_Version, dpo_FirstSeen, dpo_LastSeen
      FROM DevicePorts WHERE dpo_MAC = ? ORDER BY dpo_Protocol, dpo_Port`);
    this.portUpsert = db.prepare(`
      INSERT INTO DevicePorts (dpo_MAC, dpo_Port, dpo_Protocol, dpo_Service, dpo_Product, dpo_Version,
                               dpo_FirstSeen, dpo_LastSeen)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (dpo_MAC, dpo_Port, dpo_Protocol) DO UPDATE SET dpo_Service = excluded.dpo_Service,
        dpo_Product = excluded.dpo_Product, dpo_Version = excluded.dpo_Version,
        dpo_LastSeen = excluded.dpo_LastSeen`);
    this.portDelete = db.prepare(
      'DELETE FROM DevicePorts WHERE dpo_MAC = ? AND dpo_Port = ? AND dpo_Protocol = ?',
    );
    this.existsStmt = db.prepare<[string], number>('SELECT 1 FROM Devices WHERE devMac = ?').pluck();
    // No index on the addresses: one scan of Devices per call, as NetAlertX's getByIP (10,000
    // devices: about a millisecond); asked only by POST /device/open_ports.
    this.atStmt = db
      .prepare<[string, string], string>(
        `SELECT devMac FROM Devices WHERE devLastIP = ? OR devPrimaryIPv6 = ?
         ORDER BY devPresentLastScan DESC, devLastConnection DESC, devMac LIMIT 1`,
      )
      .pluck();
    this.watched = db.prepare(`
      SELECT devMac AS mac, devLastIP AS ip FROM Devices
      WHERE devWatchPorts = 1 AND devPresentLastScan = 1 ORDER BY devMac`);
  }

  private exists(mac: string): boolean {
    return this.existsStmt.get(mac) !== undefined;
  }

  deviceExists(mac: string): Promise<boolean> {
    return settled(() => this.exists(mac));
  }

  deviceAt(ip: string): Promise<string | undefined> {
    return settled(() => this.atStmt.get(ip, ip));
  }

  watchedDevices(): Promise<{ mac: string; ip: string }[]> {
    return settled(() => this.watched.all());
  }

  memory(kind: MemoryKind): Promise<Map<string, string>> {
    return settled(() => new Map(this.memoryAll.all(kind).map((row) => [row.wat_Key, row.wat_Value])));
  }

  private remembered(kind: MemoryKind, key: string): string | undefined {
    return this.memoryGet.get(kind, key)?.wat_Value;
  }

  /** Sets (value given) or forgets (undefined) one key. Run inside the caller's transaction. */
  remember(kind: MemoryKind, key: string, value: string | undefined): void {
    if (value === undefined) this.memoryDelete.run(kind, key);
    else this.memorySet.run(kind, key, value);
  }

  ports(mac: string): Promise<{ scannedAt: string | null; ports: StoredPort[] }> {
    return settled(() => {
      const scanned = this.remembered('ports-scanned', mac);
      return {
        scannedAt: scanned === undefined ? null : fromDbTime(scanned),
        ports: this.portsOf.all(mac).map((row) => ({
          ...openPort(row),
          firstSeen: fromDbTime(row.dpo_FirstSeen),
          lastSeen: fromDbTime(row.dpo_LastSeen),
        })),
      };
    });
  }

  recordPortScans(
    scans: readonly PortScan[],
    now: Date,
    plan: (diffs: ReadonlyMap<string, PortDiff>) => PortEvents,
  ): Promise<readonly PlannedEvent[]> {
    // Through the group commit: the flush to disk runs in the thread pool, so the watch's commits
    // never hold the event loop (synchronous commits here cost GETs 50-130 ms p99).
    return this.core.write(() => {
      const diffs = new Map<string, PortDiff>();
      for (const { mac, ports } of scans) {
        const diff = this.writePorts(mac, ports, now);
        if (diff !== undefined) diffs.set(mac, diff);
      }
      const { events, notify } = plan(diffs);
      if (events.length > 0)
        applyCycle(
          this.core,
          { outbox: this.outbox },
          { newDevices: [], updates: [], events, openSessions: [], closeSessions: [], scanState: [] },
          { notify },
        );
      return events;
    });
  }

  /**
   * Replaces the device's open ports with a scan's and says what changed; undefined when the
   * device no longer exists (deleted while it was scanned): nothing is written.
   */
  private writePorts(mac: string, ports: readonly OpenPort[], now: Date): PortDiff | undefined {
    if (!this.exists(mac)) return undefined;
    const time = dbTime(now);
    const hadPreviousScan = this.remembered('ports-scanned', mac) !== undefined;
    const { opened, closed, open } = portChanges(this.portsOf.all(mac).map(openPort), ports);
    for (const p of closed) this.portDelete.run(mac, p.port, p.protocol);
    for (const p of open)
      this.portUpsert.run(mac, p.port, p.protocol, p.service, p.product, p.version, time, time);
    this.remember('ports-scanned', mac, time);
    return { hadPreviousScan, opened, closed };
  }
}

/**
 * What a scan changed against the stored ports (by port and protocol): the ports it opened, those
 * it closed, and its ports once each (both stores write `open` and delete `closed`).
 */
export function portChanges(
  before: readonly OpenPort[],
  scan: readonly OpenPort[],
): { opened: OpenPort[]; closed: OpenPort[]; open: OpenPort[] } {
  const key = (p: { port: number; protocol: string }): string => `${p.port}/${p.protocol}`;
  const stored = new Map(before.map((p) => [key(p), p]));
  const now = new Map(scan.map((p) => [key(p), p]));
  return {
    opened: [...now.values()].filter((p) => !stored.has(key(p))),
    closed: [...stored.values()].filter((p) => !now.has(key(p))),
    open: [...now.values()],
  };
}
