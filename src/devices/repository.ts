/**
 * Device storage behind a small interface, so that a PostgreSQL implementation can be added later
 * without touching the routes. `SqliteDeviceRepository` prepares every statement once, in its
 * constructor; every change that touches more than one statement runs in one transaction.
 *
 * The repository speaks canonical MACs and stored column values (`DbValue`); turning client JSON into
 * column values (and rejecting bad input) is `input.ts`'s job, turning results into HTTP is the
 * routes'. Column names never come from a request: they are the catalogue's.
 */
import { randomUUID } from 'node:crypto';
import type { Database, Statement } from 'better-sqlite3';
import { periodStart, dbTime, type Period } from '../time.js';
import {
  defaultDeviceJson,
  editableFields,
  fieldsByName,
  rowToJson,
  storedFields,
  toColumn,
  type DbValue,
  type DeviceJson,
  type DeviceRow,
} from './catalogue.js';
import { deviceStatus, type DeviceStatus } from './status.js';

/** Computed per-device counts for one period (DESIGN 4). */
export interface DeviceStats {
  /** Sessions that overlap the period; a still-open session always counts. */
  readonly devSessions: number;
  /** Events in the period other than Connected/Disconnected. */
  readonly devEvents: number;
  /** `Device Down` events in the period. */
  readonly devDownAlerts: number;
  /** Hours connected within the period, open sessions counted to now, 2 decimals. */
  readonly devPresenceHours: number;
}

/** One element of devChildrenDynamic / devChildrenNicsDynamic. */
export interface DeviceChild {
  readonly devMac: string;
  readonly devName: string;
  readonly devStatus: DeviceStatus;
  readonly devParentRelType: string;
  readonly devParentPort: number | null;
  readonly devLastIP: string;
}

/** A device as GET /device/<mac> returns it: stored fields, then the computed ones. */
export type DeviceView = DeviceJson &
  DeviceStats & {
    devStatus: DeviceStatus;
    devChildrenDynamic: DeviceChild[];
    devChildrenNicsDynamic: DeviceChild[];
  };

/** Stored column values keyed by editable catalogue field name. */
export type DeviceChanges = Readonly<Record<string, DbValue>>;

export type CreateResult = 'created' | 'exists';

export interface DeviceRepository {
  /** The device with its computed fields, or undefined when there is none. */
  get(mac: string, period: Period, now: Date): DeviceView | undefined;
  exists(mac: string): boolean;
  /**
   * Creates a device: unset fields take their catalogue defaults, devFirstConnection and
   * devLastConnection default to `now`, devGUID is a fresh UUID.
   */
  create(mac: string, changes: DeviceChanges, now: Date): CreateResult;
  /** Sets the given fields only. False when the device does not exist. */
  update(mac: string, changes: DeviceChanges): boolean;
  /** Removes the device, its events and sessions, and clears its children's devParentMAC. */
  delete(mac: string): boolean;
  /** Removes the device's events and sessions; the device stays. False when it does not exist. */
  deleteEvents(mac: string): boolean;
  /** devCustomProps back to its catalogue default. False when the device does not exist. */
  resetProps(mac: string): boolean;
  /**
   * Copies every stored field but devMac from `from` to `to` (created or replaced), giving the
   * target a fresh devGUID. The target's own events and sessions are kept: they record what was
   * observed for that MAC. False (and nothing changed) when `from` does not exist.
   */
  copy(from: string, to: string): boolean;
  /** Sets one editable column. False when the device does not exist. */
  updateColumn(mac: string, column: string, value: DbValue): boolean;
  listChildren(mac: string): DeviceChild[];
  stats(mac: string, period: Period, now: Date): DeviceStats;
}

const editableNames = editableFields.map((f) => f.name);
const columnList = storedFields.map((f) => f.name).join(', ');
const copiedColumns = storedFields
  .filter((f) => f.name !== 'devMac' && f.name !== 'devGUID')
  .map((f) => f.name);

/**
 * Every SQL text the repository runs, exported so that a test can check with EXPLAIN QUERY PLAN
 * that each per-device query is an index lookup.
 */
export const deviceSql = {
  select: `SELECT ${columnList} FROM Devices WHERE devMac = ?`,
  exists: 'SELECT 1 FROM Devices WHERE devMac = ?',
  insert: `INSERT INTO Devices (${columnList}) VALUES (${storedFields.map((f) => `@${f.name}`).join(', ')})`,
  // One statement for every partial update: `@set_<name>` is 1 for the fields given. Preparing one
  // statement per combination of fields would not be "once"; rewriting an unchanged column of the
  // same row costs nothing measurable.
  update: `UPDATE Devices SET ${editableNames
    .map((n) => `${n} = CASE WHEN @set_${n} THEN @${n} ELSE ${n} END`)
    .join(', ')} WHERE devMac = @mac`,
  delete: 'DELETE FROM Devices WHERE devMac = ?',
  deleteEvents: 'DELETE FROM Events WHERE eve_MAC = ?',
  deleteSessions: 'DELETE FROM Sessions WHERE ses_MAC = ?',
  orphanChildren: "UPDATE Devices SET devParentMAC = '' WHERE devParentMAC = ?",
  resetProps: 'UPDATE Devices SET devCustomProps = ? WHERE devMac = ?',
  // One statement: the SELECT finds nothing when the source is missing, so the target is untouched.
  copy: `INSERT INTO Devices (devMac, ${copiedColumns.join(', ')}, devGUID)
    SELECT @to, ${copiedColumns.join(', ')}, @guid FROM Devices WHERE devMac = @from
    ON CONFLICT (devMac) DO UPDATE SET ${[...copiedColumns, 'devGUID'].map((n) => `${n} = excluded.${n}`).join(', ')}`,
  children: `SELECT devMac, devName, devPresentLastScan, devAlertDown, devParentRelType, devParentPort, devLastIP
    FROM Devices WHERE devParentMAC = ? ORDER BY devMac`,
  // @start is '' for `all`: every stored time sorts after it.
  eventCounts: `SELECT
      COUNT(*) FILTER (WHERE eve_EventType NOT IN ('Connected', 'Disconnected')) AS events,
      COUNT(*) FILTER (WHERE eve_EventType = 'Device Down') AS downAlerts
    FROM Events WHERE eve_MAC = @mac AND eve_DateTime >= @start`,
  // A session is open while it has no disconnection time or is flagged still connected; it then
  // ends "now". Its start is clipped to the period start. A session with no connection time counts
  // but adds no hours (MAX with NULL is NULL, which SUM skips): its length is unknown.
  sessionStats: `SELECT COUNT(*) AS sessions,
      TOTAL(MAX(0, unixepoch(CASE WHEN ses_DateTimeDisconnection IS NULL OR ses_StillConnected = 1
                                  THEN @now ELSE ses_DateTimeDisconnection END)
                   - unixepoch(MAX(ses_DateTimeConnection, @start)))) AS seconds
    FROM Sessions
    WHERE ses_MAC = @mac
      AND (ses_DateTimeDisconnection IS NULL OR ses_StillConnected = 1 OR ses_DateTimeDisconnection > @start)`,
  updateColumn: (column: string) => `UPDATE Devices SET ${column} = ? WHERE devMac = ?`,
} as const;

interface ChildRow {
  devMac: string;
  devName: string;
  devPresentLastScan: number;
  devAlertDown: number;
  devParentRelType: string;
  devParentPort: number | null;
  devLastIP: string;
}

const defaultColumns: Readonly<Record<string, DbValue>> = (() => {
  const defaults = defaultDeviceJson();
  return Object.fromEntries(storedFields.map((f) => [f.name, toColumn(f, defaults[f.name])]));
})();
const defaultCustomProps = defaultColumns.devCustomProps ?? '[]';

export class SqliteDeviceRepository implements DeviceRepository {
  private readonly selectStmt: Statement<[string], DeviceRow>;
  private readonly existsStmt: Statement<[string]>;
  private readonly insertStmt: Statement<[Record<string, DbValue>]>;
  private readonly updateStmt: Statement<[Record<string, DbValue>]>;
  private readonly deleteStmt: Statement<[string]>;
  private readonly deleteEventsStmt: Statement<[string]>;
  private readonly deleteSessionsStmt: Statement<[string]>;
  private readonly orphanChildrenStmt: Statement<[string]>;
  private readonly resetPropsStmt: Statement<[string, string]>;
  private readonly copyStmt: Statement<[{ from: string; to: string; guid: string }]>;
  private readonly childrenStmt: Statement<[string], ChildRow>;
  private readonly eventCountsStmt: Statement<
    [{ mac: string; start: string }],
    { events: number; downAlerts: number }
  >;
  private readonly sessionStatsStmt: Statement<
    [{ mac: string; start: string; now: string }],
    { sessions: number; seconds: number }
  >;
  private readonly updateColumnStmts: ReadonlyMap<string, Statement<[DbValue, string]>>;
  private readonly deleteTx: (mac: string) => boolean;
  private readonly deleteEventsTx: (mac: string) => boolean;
  private readonly copyTx: (from: string, to: string) => boolean;
  private readonly createTx: (row: Record<string, DbValue>) => CreateResult;

  constructor(db: Database) {
    this.selectStmt = db.prepare(deviceSql.select);
    this.existsStmt = db.prepare(deviceSql.exists).pluck();
    this.insertStmt = db.prepare(deviceSql.insert);
    this.updateStmt = db.prepare(deviceSql.update);
    this.deleteStmt = db.prepare(deviceSql.delete);
    this.deleteEventsStmt = db.prepare(deviceSql.deleteEvents);
    this.deleteSessionsStmt = db.prepare(deviceSql.deleteSessions);
    this.orphanChildrenStmt = db.prepare(deviceSql.orphanChildren);
    this.resetPropsStmt = db.prepare(deviceSql.resetProps);
    this.copyStmt = db.prepare(deviceSql.copy);
    this.childrenStmt = db.prepare(deviceSql.children);
    this.eventCountsStmt = db.prepare(deviceSql.eventCounts);
    this.sessionStatsStmt = db.prepare(deviceSql.sessionStats);
    this.updateColumnStmts = new Map(
      editableNames.map((name) => [name, db.prepare<[DbValue, string]>(deviceSql.updateColumn(name))]),
    );

    this.createTx = db.transaction((row: Record<string, DbValue>): CreateResult => {
      if (this.existsStmt.get(row.devMac as string) !== undefined) return 'exists';
      this.insertStmt.run(row);
      return 'created';
    });
    this.deleteTx = db.transaction((mac: string): boolean => {
      if (this.deleteStmt.run(mac).changes === 0) return false;
      this.deleteEventsStmt.run(mac);
      this.deleteSessionsStmt.run(mac);
      this.orphanChildrenStmt.run(mac);
      return true;
    });
    this.deleteEventsTx = db.transaction((mac: string): boolean => {
      if (this.existsStmt.get(mac) === undefined) return false;
      this.deleteEventsStmt.run(mac);
      this.deleteSessionsStmt.run(mac);
      return true;
    });
    this.copyTx = db.transaction(
      (from: string, to: string): boolean => this.copyStmt.run({ from, to, guid: randomUUID() }).changes > 0,
    );
  }

  get(mac: string, period: Period, now: Date): DeviceView | undefined {
    const row = this.selectStmt.get(mac);
    if (row === undefined) return undefined;
    const children = this.listChildren(mac);
    return {
      ...rowToJson(row),
      devStatus: deviceStatus(row.devPresentLastScan as number, row.devAlertDown as number),
      ...this.stats(mac, period, now),
      devChildrenDynamic: children,
      devChildrenNicsDynamic: children.filter((c) => c.devParentRelType === 'nic'),
    };
  }

  exists(mac: string): boolean {
    return this.existsStmt.get(mac) !== undefined;
  }

  create(mac: string, changes: DeviceChanges, now: Date): CreateResult {
    assertEditable(changes);
    const nowText = dbTime(now);
    const row: Record<string, DbValue> = {
      ...defaultColumns,
      devFirstConnection: nowText,
      devLastConnection: nowText,
      ...changes,
      devMac: mac,
      devGUID: randomUUID(),
    };
    return this.createTx(row);
  }

  update(mac: string, changes: DeviceChanges): boolean {
    assertEditable(changes);
    const params: Record<string, DbValue> = { mac };
    for (const name of editableNames) {
      const given = Object.hasOwn(changes, name);
      params[`set_${name}`] = given ? 1 : 0;
      params[name] = given ? (changes[name] ?? null) : null;
    }
    return this.updateStmt.run(params).changes > 0;
  }

  delete(mac: string): boolean {
    return this.deleteTx(mac);
  }

  deleteEvents(mac: string): boolean {
    return this.deleteEventsTx(mac);
  }

  resetProps(mac: string): boolean {
    return this.resetPropsStmt.run(defaultCustomProps as string, mac).changes > 0;
  }

  copy(from: string, to: string): boolean {
    return this.copyTx(from, to);
  }

  updateColumn(mac: string, column: string, value: DbValue): boolean {
    const statement = this.updateColumnStmts.get(column);
    if (statement === undefined) throw new RangeError(`'${column}' is not an editable device field`);
    return statement.run(value, mac).changes > 0;
  }

  listChildren(mac: string): DeviceChild[] {
    return this.childrenStmt.all(mac).map((c) => ({
      devMac: c.devMac,
      devName: c.devName,
      devStatus: deviceStatus(c.devPresentLastScan, c.devAlertDown),
      devParentRelType: c.devParentRelType,
      devParentPort: c.devParentPort,
      devLastIP: c.devLastIP,
    }));
  }

  stats(mac: string, period: Period, now: Date): DeviceStats {
    const start = periodStart(period, now) ?? '';
    const events = this.eventCountsStmt.get({ mac, start });
    const sessions = this.sessionStatsStmt.get({ mac, start, now: dbTime(now) });
    return {
      devSessions: sessions?.sessions ?? 0,
      devEvents: events?.events ?? 0,
      devDownAlerts: events?.downAlerts ?? 0,
      devPresenceHours: Math.round((sessions?.seconds ?? 0) / 36) / 100,
    };
  }
}

/** The repository's own guard: a change may only name an editable catalogue field. */
function assertEditable(changes: DeviceChanges): void {
  for (const name of Object.keys(changes)) {
    if (fieldsByName.get(name)?.editable !== true)
      throw new RangeError(`'${name}' is not an editable device field`);
  }
}
