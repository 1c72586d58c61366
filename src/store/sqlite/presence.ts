/**
 * The scanner's side of the SQLite engine: every device's presence state in one read, a cycle's
 * writes in one IMMEDIATE transaction (new devices, links, aliases seen, presence fields, sessions,
 * events, scan memory, names), and history pruning in batches. Statements are prepared once.
 */
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { jsonToColumns } from '../../devices/catalogue.js';
import type { KnownDevice, NameUpdate, PresenceChanges, SiteMark } from '../../devices/presence.js';
import { dbTime, fromDbTime } from '../../time.js';
import type { PruneResult } from '../devices.js';
import { deviceSql, macSql, nameSql, presenceSql } from './device-sql.js';
import { newDeviceRow, type CoreApplyHooks } from './rows.js';

/** A device's presence state as both stores read it (presenceSql.load; the PostgreSQL store too). */
export interface StateRow {
  devMac: string;
  devPresentLastScan: number;
  devAlertDown: number;
  devAlertEvents: number;
  devScan: number;
  devIsArchived: number;
  devLastIP: string;
  devPrimaryIPv6: string;
  devVendor: string;
  devCanSleep: number;
  devLastConnection: string | null;
  devMissesBeforeAbsent: number;
  devSite: string;
  misses: number;
  lastAbsence: KnownDevice['lastAbsence'];
  flapping: number;
}

/** A Date as storage text, or null. */
const timeText = (value: Date | null): string | null => (value === null ? null : dbTime(value));

/** devLastConnection as a Date; null when never seen or not a time (e.g. imported text). */
/** A presence state row as the state machine reads it. */
export function knownDeviceOf(row: StateRow, recentToggles: number): KnownDevice {
  return {
    mac: row.devMac,
    presentLastScan: row.devPresentLastScan === 1,
    alertDown: row.devAlertDown === 1,
    alertEvents: row.devAlertEvents === 1,
    scan: row.devScan === 1,
    archived: row.devIsArchived === 1,
    lastIP: row.devLastIP,
    primaryIPv6: row.devPrimaryIPv6,
    vendor: row.devVendor,
    misses: row.misses,
    lastAbsence: row.lastAbsence,
    canSleep: row.devCanSleep === 1,
    lastConnection: lastSighting(row.devLastConnection),
    missesBeforeAbsent: row.devMissesBeforeAbsent,
    flapping: row.flapping === 1,
    recentToggles,
    site: row.devSite,
  };
}

function lastSighting(text: string | null): Date | null {
  if (text === null) return null;
  const ms = Date.parse(fromDbTime(text));
  return Number.isNaN(ms) ? null : new Date(ms);
}

export class SqlitePresence {
  private readonly loadPresenceStmt: Statement<[], StateRow>;
  private readonly loadScopedStmt: Statement<[{ site: string | null; macs: string }], StateRow>;
  private readonly togglesStmt: Statement<[string], { mac: string; toggles: number }>;
  private readonly setSiteStmt: Statement<[SiteMark]>;
  private readonly updatePresenceStmt: Statement<
    [number, string, string | null, string | null, string | null, string]
  >;
  private readonly insertEventStmt: Statement<[string, string, string, string, string, number]>;
  private readonly openSessionStmt: Statement<[string, string, string, string]>;
  private readonly closeSessionStmt: Statement<[string, string, string]>;
  private readonly upsertScanStateStmt: Statement<[string, number, string | null, number]>;
  private readonly pruneEventsStmt: Statement<[string, number]>;
  private readonly pruneSessionsStmt: Statement<[string, number]>;
  private readonly pruneScanStateStmt: Statement<[]>;
  private readonly insertDeviceStmt: Statement<[Record<string, unknown>]>;
  private readonly insertAliasStmt: Statement<
    [{ mac: string; devMac: string; firstSeen: string | null; lastSeen: string | null; reason: string }]
  >;
  private readonly aliasSeenStmt: Statement<[string, string]>;
  private readonly pruneAliasesStmt: Statement<[]>;
  private readonly setNameStmt: Statement<[NameUpdate]>;
  private readonly presenceTx: Transaction<(changes: PresenceChanges, hooks: CoreApplyHooks) => void>;

  /**
   * @param logOnce runs a cycle's writes so that the change log names each device once
   *   (`ChangeTracking.logOnce`), not once per row written
   */
  constructor(db: Database, logOnce: <T>(write: () => T) => T) {
    this.loadPresenceStmt = db.prepare(presenceSql.load);
    this.loadScopedStmt = db.prepare(presenceSql.loadScoped);
    this.togglesStmt = db.prepare(presenceSql.toggles);
    this.setSiteStmt = db.prepare(presenceSql.setSite);
    this.updatePresenceStmt = db.prepare(presenceSql.updatePresence);
    this.insertEventStmt = db.prepare(presenceSql.insertEvent);
    this.openSessionStmt = db.prepare(presenceSql.openSession);
    this.closeSessionStmt = db.prepare(presenceSql.closeSession);
    this.upsertScanStateStmt = db.prepare(presenceSql.upsertScanState);
    this.pruneEventsStmt = db.prepare(presenceSql.pruneEvents);
    this.pruneSessionsStmt = db.prepare(presenceSql.pruneSessions);
    this.pruneScanStateStmt = db.prepare(presenceSql.pruneScanState);
    this.insertDeviceStmt = db.prepare(deviceSql.insert);
    this.insertAliasStmt = db.prepare(macSql.insert);
    this.aliasSeenStmt = db.prepare(macSql.seen);
    this.pruneAliasesStmt = db.prepare(macSql.prune);
    this.setNameStmt = db.prepare(nameSql.set);
    this.presenceTx = db.transaction((changes: PresenceChanges, hooks: CoreApplyHooks) => {
      logOnce(() => {
        this.writePresence(changes);
      });
      hooks.beforeCommit?.();
      hooks.testOnlyBeforeCommit?.();
    });
  }

  /** Every device's presence state; with `toggleSince`, each one's recent toggles counted. */
  load(toggleSince: Date | null = null): Map<string, KnownDevice> {
    return this.presenceOf(this.loadPresenceStmt.iterate(), toggleSince);
  }

  /** `load` of the devices last seen at `site` and of the given MACs only (a probe's cycle). */
  loadSite(
    site: string | null,
    macs: readonly string[],
    toggleSince: Date | null = null,
  ): Map<string, KnownDevice> {
    return this.presenceOf(this.loadScopedStmt.iterate({ site, macs: JSON.stringify(macs) }), toggleSince);
  }

  private presenceOf(rows: Iterable<StateRow>, toggleSince: Date | null): Map<string, KnownDevice> {
    const known = new Map<string, KnownDevice>();
    const toggles = new Map<string, number>();
    if (toggleSince !== null)
      for (const row of this.togglesStmt.iterate(dbTime(toggleSince))) toggles.set(row.mac, row.toggles);
    for (const row of rows) {
      known.set(row.devMac, knownDeviceOf(row, toggles.get(row.devMac) ?? 0));
    }
    return known;
  }

  /** A cycle in one IMMEDIATE transaction; the hooks run inside it, before COMMIT. */
  apply(changes: PresenceChanges, hooks: CoreApplyHooks = {}): void {
    this.presenceTx.immediate(changes, hooks);
  }

  /** Up to `limit` events and closed sessions older than `before`. */
  pruneHistory(before: Date, limit: number): PruneResult {
    const cutoff = dbTime(before);
    return {
      events: this.pruneEventsStmt.run(cutoff, limit).changes,
      sessions: this.pruneSessionsStmt.run(cutoff, limit).changes,
    };
  }

  /** The scan memory and aliases of MACs that are no longer devices. */
  pruneScanMemory(): void {
    this.pruneScanStateStmt.run();
    this.pruneAliasesStmt.run();
  }

  private writePresence(changes: PresenceChanges): void {
    for (const device of changes.newDevices)
      this.insertDeviceStmt.run(newDeviceRow(device.devMac, jsonToColumns(device)));
    for (const link of changes.links ?? []) {
      const at = dbTime(link.dateTime);
      this.insertAliasStmt.run({
        mac: link.mac,
        devMac: link.devMac,
        firstSeen: at,
        lastSeen: at,
        reason: link.reason,
      });
    }
    for (const a of changes.aliasesSeen ?? []) this.aliasSeenStmt.run(dbTime(a.dateTime), a.mac);
    for (const u of changes.updates)
      this.updatePresenceStmt.run(
        u.presentLastScan,
        u.lastIP,
        timeText(u.lastConnection),
        u.vendor,
        u.primaryIPv6,
        u.mac,
      );
    // Close before open: a device never has two open sessions within one cycle.
    for (const c of changes.closeSessions) this.closeSessionStmt.run(c.eventType, dbTime(c.dateTime), c.mac);
    for (const o of changes.openSessions)
      this.openSessionStmt.run(o.mac, o.ip, o.eventType, dbTime(o.dateTime));
    for (const e of changes.events)
      this.insertEventStmt.run(e.mac, e.ip, dbTime(e.dateTime), e.type, e.additionalInfo, e.pendingAlert);
    for (const s of changes.scanState)
      this.upsertScanStateStmt.run(s.mac, s.misses, s.lastAbsence, s.flapping);
    for (const n of changes.names ?? []) this.setNameStmt.run(n);
    for (const s of changes.sites ?? []) this.setSiteStmt.run(s);
  }
}
