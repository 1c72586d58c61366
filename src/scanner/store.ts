/**
 * The scanner's SQLite side: loads the previous state of every device in one query, applies a
 * cycle's plan in one transaction (a crash leaves either the whole cycle or none of it), and
 * prunes old history in small batches. Statements are prepared once; Devices columns come only
 * from the field catalogue. Sessions are kept incrementally: a connect inserts one open row, a
 * disconnect closes that row; the table is never rebuilt.
 */
import { setImmediate } from 'node:timers/promises';
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { jsonToColumns, type DbValue } from '../devices/catalogue.js';
import { deviceSql, newDeviceRow } from '../devices/repository.js';
import { dbTime } from '../time.js';
import type { AbsenceEvent, KnownDevice, ScanPlan } from './state-machine.js';

interface StateRow {
  devMac: string;
  devPresentLastScan: number;
  devAlertDown: number;
  devAlertEvents: number;
  devScan: number;
  devIsArchived: number;
  devLastIP: string;
  devVendor: string;
  misses: number;
  lastAbsence: AbsenceEvent | null;
}

export interface ApplyHooks {
  /**
   * Called inside the transaction, after the cycle's writes and before COMMIT: the alert outbox
   * writes the cycle's notifications here, so they are committed with the cycle or not at all.
   */
  readonly beforeCommit?: () => void;
  /** Test seam: called inside the transaction, after every write and before COMMIT (crash tests). */
  readonly testOnlyBeforeCommit?: () => void;
}

export interface PruneResult {
  readonly events: number;
  readonly sessions: number;
}

export interface PruneOptions {
  /** Rows deleted per statement; the event loop gets a turn between batches. Default 1000. */
  readonly batchSize?: number;
}

export class ScanStore {
  private readonly loadStatement: Statement<[], StateRow>;
  private readonly insertDevice: Statement<[Record<string, DbValue>]>;
  private readonly updatePresence: Statement<[number, string, string | null, string | null, string]>;
  private readonly insertEvent: Statement<[string, string, string, string, string, number]>;
  private readonly openSession: Statement<[string, string, string, string]>;
  private readonly closeSession: Statement<[string, string, string]>;
  private readonly upsertScanState: Statement<[string, number, string | null]>;
  private readonly pruneEvents: Statement<[string, number]>;
  private readonly pruneSessions: Statement<[string, number]>;
  private readonly pruneScanState: Statement<[]>;
  private readonly applyTransaction: Transaction<(plan: ScanPlan, hooks: ApplyHooks) => void>;

  constructor(private readonly db: Database) {
    this.loadStatement = db.prepare(`
      SELECT d.devMac, d.devPresentLastScan, d.devAlertDown, d.devAlertEvents, d.devScan,
             d.devIsArchived, d.devLastIP, d.devVendor,
             COALESCE(s.misses, 0) AS misses, s.lastAbsence
      FROM Devices d LEFT JOIN ScanState s ON s.mac = d.devMac`);
    this.insertDevice = db.prepare(deviceSql.insert);
    this.updatePresence = db.prepare(`
      UPDATE Devices SET devPresentLastScan = ?, devLastIP = ?,
        devLastConnection = COALESCE(?, devLastConnection), devVendor = COALESCE(?, devVendor)
      WHERE devMac = ?`);
    this.insertEvent = db.prepare(`
      INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo,
                          eve_PendingAlertEmail, eve_PairEventRowid)
      VALUES (?, ?, ?, ?, ?, ?, NULL)`);
    this.openSession = db.prepare(`
      INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
                            ses_EventTypeDisconnection, ses_DateTimeDisconnection,
                            ses_StillConnected, ses_AdditionalInfo)
      VALUES (?, ?, ?, ?, '', NULL, 1, '')`);
    this.closeSession = db.prepare(`
      UPDATE Sessions INDEXED BY Sessions_open
      SET ses_EventTypeDisconnection = ?, ses_DateTimeDisconnection = ?, ses_StillConnected = 0
      WHERE ses_MAC = ? AND ses_StillConnected = 1`);
    this.upsertScanState = db.prepare(`
      INSERT INTO ScanState (mac, misses, lastAbsence) VALUES (?, ?, ?)
      ON CONFLICT (mac) DO UPDATE SET misses = excluded.misses, lastAbsence = excluded.lastAbsence`);
    // rowid batches picked through the time indexes (Events_time, Sessions_disconnection).
    this.pruneEvents = db.prepare(`
      DELETE FROM Events WHERE rowid IN (
        SELECT rowid FROM Events WHERE eve_DateTime < ? LIMIT ?)`);
    this.pruneSessions = db.prepare(`
      DELETE FROM Sessions WHERE rowid IN (
        SELECT rowid FROM Sessions
        WHERE ses_DateTimeDisconnection < ? AND ses_StillConnected = 0 LIMIT ?)`);
    this.pruneScanState = db.prepare(
      'DELETE FROM ScanState WHERE NOT EXISTS (SELECT 1 FROM Devices WHERE devMac = ScanState.mac)',
    );
    this.applyTransaction = db.transaction((plan: ScanPlan, hooks: ApplyHooks) => {
      this.write(plan);
      hooks.beforeCommit?.();
      hooks.testOnlyBeforeCommit?.();
    });
  }

  /** The previous state of every device, in one query. */
  loadState(): Map<string, KnownDevice> {
    const known = new Map<string, KnownDevice>();
    for (const row of this.loadStatement.iterate()) {
      known.set(row.devMac, {
        mac: row.devMac,
        presentLastScan: row.devPresentLastScan === 1,
        alertDown: row.devAlertDown === 1,
        alertEvents: row.devAlertEvents === 1,
        scan: row.devScan === 1,
        archived: row.devIsArchived === 1,
        lastIP: row.devLastIP,
        vendor: row.devVendor,
        misses: row.misses,
        lastAbsence: row.lastAbsence,
      });
    }
    return known;
  }

  /** Applies a plan in one transaction: all of it or, on any error, none of it. */
  apply(plan: ScanPlan, hooks: ApplyHooks = {}): void {
    this.applyTransaction.immediate(plan, hooks);
  }

  private write(plan: ScanPlan): void {
    for (const device of plan.newDevices) {
      this.insertDevice.run(newDeviceRow(device.devMac, jsonToColumns(device)));
    }
    for (const u of plan.updates)
      this.updatePresence.run(u.presentLastScan, u.lastIP, u.lastConnection, u.vendor, u.mac);
    // Close before open: a device never has two open sessions within one plan.
    for (const c of plan.closeSessions) this.closeSession.run(c.eventType, c.dateTime, c.mac);
    for (const o of plan.openSessions) this.openSession.run(o.mac, o.ip, o.eventType, o.dateTime);
    for (const e of plan.events)
      this.insertEvent.run(e.mac, e.ip, e.dateTime, e.type, e.additionalInfo, e.pendingAlert);
    for (const s of plan.scanState) this.upsertScanState.run(s.mac, s.misses, s.lastAbsence);
  }

  /**
   * Deletes events, and closed sessions, older than `days` days before `now`; open sessions are
   * kept whatever their age. Works in batches and yields to the event loop between them, so a
   * huge first prune does not stall HTTP requests.
   */
  async pruneHistory(days: number, now: Date, options: PruneOptions = {}): Promise<PruneResult> {
    // 1,000 rows keep each pause of the event loop near 10 ms on this hardware (5,000 took ~60 ms
    // and dragged device GETs to p50 125 ms during a first prune of a two-year-old database).
    const batchSize = options.batchSize ?? 1000;
    const cutoff = dbTime(new Date(now.getTime() - days * 86_400_000));
    const events = await deleteInBatches(this.pruneEvents, cutoff, batchSize);
    const sessions = await deleteInBatches(this.pruneSessions, cutoff, batchSize);
    // Device deletes through the API drop their scan memory in the same transaction; this catches
    // rows of devices deleted some other way (another process, the sqlite3 CLI).
    if (this.db.open) this.pruneScanState.run();
    return { events, sessions };
  }
}

/** Runs a `DELETE ... LIMIT batchSize` until it deletes less; the event loop gets a turn between. */
async function deleteInBatches(
  statement: Statement<[string, number]>,
  cutoff: string,
  batchSize: number,
): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = statement.run(cutoff, batchSize).changes;
    total += deleted;
    if (deleted < batchSize) return total;
    await setImmediate();
  }
}
