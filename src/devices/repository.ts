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
  jsonToColumns,
  rowToJson,
  storedFields,
  type DbValue,
  type DeviceJson,
  type DeviceRow,
} from './catalogue.js';
import {
  eventColumns,
  eventToJson,
  sessionColumns,
  sessionToJson,
  type EventJson,
  type EventRow,
  type SessionJson,
  type SessionRow,
} from './history.js';
import { deviceListSql, searchParams, type DeviceListQuery } from './list-query.js';
import {
  deviceStatus,
  deviceTotalsSql,
  deviceGroups,
  type DeviceGroup,
  type DeviceStatus,
} from './status.js';

/** Computed per-device counts for one period. */
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

/** Period statistics with what a view cache needs to advance presence hours in time. */
interface PeriodStats {
  readonly stats: DeviceStats;
  /** Connected seconds within the period up to `now`. */
  readonly seconds: number;
  /** Open sessions with a known start (each adds one second per second). */
  readonly openSessions: number;
  /** Storage time of the latest open session's start, or null. */
  readonly latestOpenStart: string | null;
}

/** A device view with what a cache needs to advance its presence hours in time. */
export interface TimedView extends Omit<PeriodStats, 'stats'> {
  readonly view: DeviceView;
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

/** A device as GET /devices lists it: stored fields and devStatus, no counts or children. */
export type DeviceListItem = DeviceJson & { devStatus: DeviceStatus };

/** Which rows of a list to return (validated by the caller: offset >= 0, limit >= 1). */
export interface Page {
  readonly offset: number;
  readonly limit: number;
}

/** One page of a list and the number of rows the whole filtered list holds. */
export interface PageResult<T> {
  readonly items: T[];
  readonly total: number;
}

/** The counts of the status counters, keyed by group (status.ts). */
export type DeviceTotals = Readonly<Record<DeviceGroup, number>>;

/** Stored column values keyed by editable catalogue field name. */
export type DeviceChanges = Readonly<Record<string, DbValue>>;

export type CreateResult = 'created' | 'exists';

export interface DeviceRepository {
  /** The device with its computed fields, or undefined when there is none. */
  get(mac: string, period: Period, now: Date): DeviceView | undefined;
  /** get() plus the open sessions and connected seconds behind devPresenceHours (for caches). */
  getTimed(mac: string, period: Period, now: Date): TimedView | undefined;
  /** A value that changes whenever stored data may have changed, by this process or another. */
  changeStamp(): string;
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
  /**
   * Devices filtered by status or group and search text, sorted (MAC order by default); `total`
   * counts the filtered list.
   */
  listDevices(query: DeviceListQuery, page: Page): PageResult<DeviceListItem>;
  /** How many devices each status counter holds. */
  totals(): DeviceTotals;
  /**
   * The device's events at or after the period start (the rule of devEvents, without its type
   * filter), newest first. Undefined when the device does not exist.
   */
  listEvents(mac: string, period: Period, now: Date, page: Page): PageResult<EventJson> | undefined;
  /**
   * The device's sessions that overlap the period (the rule of devSessions, so `total` equals
   * devSessions for the same period), newest connection first. Undefined when the device does
   * not exist.
   */
  listSessions(mac: string, period: Period, now: Date, page: Page): PageResult<SessionJson> | undefined;
}

const editableNames = editableFields.map((f) => f.name);
const columnList = storedFields.map((f) => f.name).join(', ');
const copiedColumns = storedFields
  .filter((f) => f.name !== 'devMac' && f.name !== 'devGUID')
  .map((f) => f.name);

/**
 * The period rules, shared by the counts of GET /device and the history lists so that both always
 * select the same rows. `@start` is '' for `all`: every stored time sorts after it. A session
 * overlaps the period when it is open (no disconnection time, or flagged still connected) or ended
 * after the period start.
 */
const eventInPeriod = 'eve_MAC = @mac AND eve_DateTime >= @start';
/** A session is open while it has no disconnection time or is flagged still connected. */
const sessionOpen = '(ses_DateTimeDisconnection IS NULL OR ses_StillConnected = 1)';
const sessionInPeriod = `ses_MAC = @mac AND (${sessionOpen} OR ses_DateTimeDisconnection > @start)`;

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
  // The presence scanner's memory of a MAC (misses in the grace window, how its last absence was
  // recorded: migration 2). It describes the history and presence flags that delete, events/delete
  // and copy replace, so those drop it in the same transaction; the scanner then starts that MAC
  // afresh (misses 0; a reappearance is Connected, not Down Reconnected).
  deleteScanState: 'DELETE FROM ScanState WHERE mac = ?',
  orphanChildren: "UPDATE Devices SET devParentMAC = '' WHERE devParentMAC = ?",
  resetProps: 'UPDATE Devices SET devCustomProps = ? WHERE devMac = ?',
  // One statement: the SELECT finds nothing when the source is missing, so the target is untouched.
  copy: `INSERT INTO Devices (devMac, ${copiedColumns.join(', ')}, devGUID)
    SELECT @to, ${copiedColumns.join(', ')}, @guid FROM Devices WHERE devMac = @from
    ON CONFLICT (devMac) DO UPDATE SET ${[...copiedColumns, 'devGUID'].map((n) => `${n} = excluded.${n}`).join(', ')}`,
  children: `SELECT devMac, devName, devPresentLastScan, devAlertDown, devParentRelType, devParentPort, devLastIP
    FROM Devices WHERE devParentMAC = ? ORDER BY devMac`,
  eventCounts: `SELECT
      COUNT(*) FILTER (WHERE eve_EventType NOT IN ('Connected', 'Disconnected')) AS events,
      COUNT(*) FILTER (WHERE eve_EventType = 'Device Down') AS downAlerts
    FROM Events WHERE ${eventInPeriod}`,
  // An open session ends "now". Its start is clipped to the period start. A session with no connection time counts
  // but adds no hours (MAX with NULL is NULL, which SUM skips): its length is unknown.
  // openSessions / latestOpenStart let the view cache advance the hours without a query: each open
  // session that started before `now` adds exactly one second per second.
  sessionStats: `SELECT COUNT(*) AS sessions,
      TOTAL(MAX(0, unixepoch(CASE WHEN ${sessionOpen} THEN @now ELSE ses_DateTimeDisconnection END)
                   - unixepoch(MAX(ses_DateTimeConnection, @start)))) AS seconds,
      COUNT(ses_DateTimeConnection) FILTER (WHERE ${sessionOpen}) AS openSessions,
      MAX(ses_DateTimeConnection) FILTER (WHERE ${sessionOpen}) AS latestOpenStart
    FROM Sessions WHERE ${sessionInPeriod}`,
  // Newest first in the order of Events_mac_time (time, then type, then rowid, all descending), so
  // a page is a backward walk of the index with no sort; ties within one second are thus ordered
  // by type, then by insertion.
  eventsPage: `SELECT ${eventColumns.join(', ')} FROM Events WHERE ${eventInPeriod}
    ORDER BY eve_DateTime DESC, eve_EventType DESC, rowid DESC LIMIT @limit OFFSET @offset`,
  eventsTotal: `SELECT COUNT(*) FROM Events WHERE ${eventInPeriod}`,
  // Newest connection first in the order of Sessions_mac_connection (a session with no recorded
  // connection time sorts last).
  sessionsPage: `SELECT ${sessionColumns.join(', ')} FROM Sessions INDEXED BY Sessions_mac_connection
    WHERE ${sessionInPeriod}
    ORDER BY ses_DateTimeConnection DESC, rowid DESC LIMIT @limit OFFSET @offset`,
  sessionsTotal: `SELECT COUNT(*) FROM Sessions WHERE ${sessionInPeriod}`,
} as const;

/** GET /devices: the SQL of one list shape (list-query.ts) over the stored columns. */
export function deviceListStatements(query: DeviceListQuery): { page: string; total: string } {
  return deviceListSql(query, columnList);
}

interface ListStatements {
  readonly page: Statement<[Record<string, unknown>], DeviceRow>;
  readonly total: Statement<[Record<string, unknown>], number>;
}

interface ChildRow {
  devMac: string;
  devName: string;
  devPresentLastScan: number;
  devAlertDown: number;
  devParentRelType: string;
  devParentPort: number | null;
  devLastIP: string;
}

const defaultColumns: Readonly<Record<string, DbValue>> = jsonToColumns(defaultDeviceJson());
const defaultCustomProps = defaultColumns.devCustomProps ?? '[]';

/**
 * The row of a new device, however it is made (POST createNew or the scanner): the catalogue
 * defaults, then `columns`, then its MAC and a fresh devGUID. Inserted with `deviceSql.insert`.
 */
export function newDeviceRow(mac: string, columns: Readonly<DeviceRow>): DeviceRow {
  return { ...defaultColumns, ...columns, devMac: mac, devGUID: randomUUID() };
}

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
    { sessions: number; seconds: number; openSessions: number; latestOpenStart: string | null }
  >;
  private readonly totalChangesStmt: Statement<[], number>;
  private readonly dataVersionStmt: Statement<[], number>;
  private readonly deleteScanStateStmt: Statement<[string]>;
  private readonly eventsPageStmt: Statement<[{ mac: string; start: string } & Page], EventRow>;
  private readonly eventsTotalStmt: Statement<[{ mac: string; start: string }], number>;
  private readonly sessionsPageStmt: Statement<[{ mac: string; start: string } & Page], SessionRow>;
  private readonly sessionsTotalStmt: Statement<[{ mac: string; start: string }], number>;
  /** Prepared on first use and kept, keyed by SQL text: one entry per list shape (a few hundred at most). */
  private readonly listStmts = new Map<string, ListStatements>();
  private readonly totalsStmt: Statement<[], Record<DeviceGroup, number>>;
  private readonly db: Database;
  /** Runs a read in one transaction, so a page and its total come from one snapshot. */
  private readonly readTx: <T>(read: () => T) => T;
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
    this.totalChangesStmt = db.prepare<[], number>('SELECT total_changes()').pluck();
    this.dataVersionStmt = db.prepare<[], number>('PRAGMA data_version').pluck();
    this.deleteScanStateStmt = db.prepare(deviceSql.deleteScanState);
    this.eventsPageStmt = db.prepare(deviceSql.eventsPage);
    this.eventsTotalStmt = db
      .prepare<[{ mac: string; start: string }], number>(deviceSql.eventsTotal)
      .pluck();
    this.sessionsPageStmt = db.prepare(deviceSql.sessionsPage);
    this.sessionsTotalStmt = db
      .prepare<[{ mac: string; start: string }], number>(deviceSql.sessionsTotal)
      .pluck();
    this.db = db;
    this.totalsStmt = db.prepare(deviceTotalsSql);
    const read = db.transaction((fn: () => unknown) => fn());
    this.readTx = <T>(fn: () => T): T => read(fn) as T;

    this.createTx = db.transaction((row: Record<string, DbValue>): CreateResult => {
      if (this.existsStmt.get(row.devMac as string) !== undefined) return 'exists';
      this.insertStmt.run(row);
      return 'created';
    });
    this.deleteTx = db.transaction((mac: string): boolean => {
      if (this.deleteStmt.run(mac).changes === 0) return false;
      this.deleteEventsStmt.run(mac);
      this.deleteSessionsStmt.run(mac);
      this.deleteScanStateStmt.run(mac);
      this.orphanChildrenStmt.run(mac);
      return true;
    });
    this.deleteEventsTx = db.transaction((mac: string): boolean => {
      if (this.existsStmt.get(mac) === undefined) return false;
      this.deleteEventsStmt.run(mac);
      this.deleteSessionsStmt.run(mac);
      this.deleteScanStateStmt.run(mac);
      return true;
    });
    this.copyTx = db.transaction((from: string, to: string): boolean => {
      if (this.copyStmt.run({ from, to, guid: randomUUID() }).changes === 0) return false;
      this.deleteScanStateStmt.run(to);
      return true;
    });
  }

  get(mac: string, period: Period, now: Date): DeviceView | undefined {
    return this.getTimed(mac, period, now)?.view;
  }

  /**
   * total_changes() moves with every write on this connection (repository, scanner), data_version
   * with every commit by another connection (another process, the sqlite3 CLI). Two statements:
   * together they cost 2 us, the table-valued pragma form 3.6 us.
   */
  changeStamp(): string {
    return `${String(this.totalChangesStmt.get())}:${String(this.dataVersionStmt.get())}`;
  }

  getTimed(mac: string, period: Period, now: Date): TimedView | undefined {
    const row = this.selectStmt.get(mac);
    if (row === undefined) return undefined;
    const children = this.listChildren(mac);
    const { stats, seconds, openSessions, latestOpenStart } = this.periodStats(mac, period, now);
    const view: DeviceView = {
      ...rowToJson(row),
      devStatus: deviceStatus(row.devPresentLastScan as number, row.devAlertDown as number),
      ...stats,
      devChildrenDynamic: children,
      devChildrenNicsDynamic: children.filter((c) => c.devParentRelType === 'nic'),
    };
    return { view, seconds, openSessions, latestOpenStart };
  }

  create(mac: string, changes: DeviceChanges, now: Date): CreateResult {
    assertEditable(changes);
    const nowText = dbTime(now);
    return this.createTx(
      newDeviceRow(mac, { devFirstConnection: nowText, devLastConnection: nowText, ...changes }),
    );
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
    return this.update(mac, { [column]: value }); // RangeError unless an editable field
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

  listDevices(query: DeviceListQuery, page: Page): PageResult<DeviceListItem> {
    const statements = this.listStatements(query);
    const search = searchParams(query.q);
    return this.readTx(() => ({
      items: statements.page.all({ ...search, ...page }).map((row) => ({
        ...rowToJson(row),
        devStatus: deviceStatus(row.devPresentLastScan as number, row.devAlertDown as number),
      })),
      total: statements.total.get(search) ?? 0,
    }));
  }

  totals(): DeviceTotals {
    const row = this.totalsStmt.get();
    return Object.fromEntries(deviceGroups.map((group) => [group, row?.[group] ?? 0])) as DeviceTotals;
  }

  private listStatements(query: DeviceListQuery): ListStatements {
    const sql = deviceListStatements(query);
    let statements = this.listStmts.get(sql.page);
    if (statements === undefined) {
      statements = {
        page: this.db.prepare(sql.page),
        total: this.db.prepare<[Record<string, unknown>], number>(sql.total).pluck(),
      };
      this.listStmts.set(sql.page, statements);
    }
    return statements;
  }

  listEvents(mac: string, period: Period, now: Date, page: Page): PageResult<EventJson> | undefined {
    const params = { mac, start: periodStart(period, now) ?? '' };
    return this.readTx(() => {
      if (this.existsStmt.get(mac) === undefined) return undefined;
      return {
        items: this.eventsPageStmt.all({ ...params, ...page }).map(eventToJson),
        total: this.eventsTotalStmt.get(params) ?? 0,
      };
    });
  }

  listSessions(mac: string, period: Period, now: Date, page: Page): PageResult<SessionJson> | undefined {
    const params = { mac, start: periodStart(period, now) ?? '' };
    return this.readTx(() => {
      if (this.existsStmt.get(mac) === undefined) return undefined;
      return {
        items: this.sessionsPageStmt.all({ ...params, ...page }).map(sessionToJson),
        total: this.sessionsTotalStmt.get(params) ?? 0,
      };
    });
  }

  stats(mac: string, period: Period, now: Date): DeviceStats {
    return this.periodStats(mac, period, now).stats;
  }

  private periodStats(mac: string, period: Period, now: Date): PeriodStats {
    const start = periodStart(period, now) ?? '';
    const events = this.eventCountsStmt.get({ mac, start });
    const sessions = this.sessionStatsStmt.get({ mac, start, now: dbTime(now) });
    const seconds = sessions?.seconds ?? 0;
    return {
      stats: {
        devSessions: sessions?.sessions ?? 0,
        devEvents: events?.events ?? 0,
        devDownAlerts: events?.downAlerts ?? 0,
        devPresenceHours: presenceHours(seconds),
      },
      seconds,
      openSessions: sessions?.openSessions ?? 0,
      latestOpenStart: sessions?.latestOpenStart ?? null,
    };
  }
}

/** Connected seconds as hours with 2 decimals (devPresenceHours). */
export function presenceHours(seconds: number): number {
  return Math.round(seconds / 36) / 100;
}

/** The repository's own guard: a change may only name an editable catalogue field. */
function assertEditable(changes: DeviceChanges): void {
  for (const name of Object.keys(changes)) {
    if (fieldsByName.get(name)?.editable !== true)
      throw new RangeError(`'${name}' is not an editable device field`);
  }
}
