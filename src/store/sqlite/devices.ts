/**
 * The SQLite device engine (the interface is ../devices.ts, given by device-store.ts; the SQL
 * text is device-sql.ts): device CRUD and lists, MACs (merge, split, aliases), names and the
 * device counts kept in memory. Its other jobs have a module each: the period statistics
 * (period-stats.ts), the change tracking (change-tracking.ts) and the scanner's presence writes
 * (presence.ts). Statements are prepared once, in the constructor; every change that touches more
 * than one statement runs in one transaction. Values cross the interface in storage-neutral form
 * and are turned into column values (times as `YYYY-MM-DD HH:MM:SS` text) here.
 */
import { randomUUID } from 'node:crypto';
import { DomainError } from '../../errors.js';
import { isRandomMac } from '../../validation.js';
import type { Database, Statement } from 'better-sqlite3';
import { GroupCommit } from '../../db/group-commit.js';
import { ChangeTracking } from './change-tracking.js';
import { PeriodStatistics } from './period-stats.js';
import { SqlitePresence } from './presence.js';
import { defaultColumns, newDeviceRow, rowGetter } from './rows.js';
import { dbTime, periodStart, type Period } from '../../time.js';
import {
  editableFields,
  fieldValueToColumn,
  fieldsByName,
  rowToJson,
  withNameSource,
  type DbValue,
  type DeviceRow,
} from '../../devices/catalogue.js';
import {
  eventToJson,
  sessionToJson,
  type EventJson,
  type EventRow,
  type SessionJson,
  type SessionRow,
} from '../../devices/history.js';
import type { NameUpdate, StoredDeviceName } from '../../devices/presence.js';
import {
  type BulkEdit,
  type BulkFailure,
  type BulkResult,
  type ChangeReader,
  type Changes,
  type CreateResult,
  type DeviceChanges,
  type DeviceChild,
  type DeviceCounts,
  type DeviceListItem,
  type DeviceTotals,
  type DeviceStats,
  type DeviceValue,
  type DeviceView,
  type MacsResult,
  type Page,
  type PageResult,
  type SearchTexts,
  type TimedView,
} from '../devices.js';
import {
  deviceListStatements,
  updateOneSql,
  deviceSql,
  macSql,
  nameSql,
  searchTextsSql,
} from './device-sql.js';
import type { DeviceListQuery } from '../../devices/list-query.js';
import { listParams, registerListFunctions } from './list-sql.js';
import { deviceCounters, deviceGroups, deviceStatus, type DeviceCounter } from '../../devices/status.js';
import { deviceCounterBitsSql, deviceCountsSql } from './status-sql.js';
import { watchSql } from './watch.js';

interface ListStatements {
  readonly page: Statement<[Record<string, unknown>], DeviceRow>;
  readonly total: Statement<[Record<string, unknown>], number>;
  readonly order: Statement<[Record<string, unknown>], string>;
}

/**
 * Above this many devices changed at once (a scan cycle), the kept counts are recounted in one
 * pass instead of device by device.
 */
const recountAbove = 256;

/** A child device's row as both stores read it (deviceSql.children). */
export interface ChildRow {
  devMac: string;
  devName: string;
  devPresentLastScan: number;
  devAlertDown: number;
  devParentRelType: string;
  devParentPort: number | null;
  devLastIP: string;
}

/** A device's name fields as both stores read them (nameSql.load; the PostgreSQL store too). */
export interface NameRow {
  devMac: string;
  devName: string;
  devNameSource: string;
  devFQDN: string;
  devLastIP: string;
}

export const nameOf = (row: NameRow): StoredDeviceName => ({
  name: row.devName,
  source: row.devNameSource,
  fqdn: row.devFQDN,
  ip: row.devLastIP,
});

const editableNames = editableFields.map((f) => f.name);
export const defaultCustomProps = defaultColumns.devCustomProps ?? '[]';

/** Editable field values as column values; RangeError for a name outside the editable catalogue. */
export function toColumns(changes: DeviceChanges): DeviceRow {
  const row: DeviceRow = {};
  for (const [name, value] of Object.entries(changes)) {
    const f = fieldsByName.get(name);
    if (f?.editable !== true) throw new RangeError(`'${name}' is not an editable device field`);
    row[name] = fieldValueToColumn(f, value);
  }
  return row;
}

/** `deviceSql.view`: the row, and 1 when the device has aliases, children. */
type ViewRow = DeviceRow & { viewHasAliases: number; viewHasChildren: number };

interface SeenTimes {
  firstSeen: string | null;
  lastSeen: string | null;
}

/** A device's own MAC first, then its aliases. */
const withOwn = (mac: string, aliases: readonly string[]): string[] => [mac, ...aliases];

export const notFoundError = (mac: string): DomainError =>
  new DomainError('not-found', `Device ${mac} not found.`, { code: 'DEVICE_NOT_FOUND' });

/**
 * A device a bulk edit could not change, from the error that refused it. Only a rule refused before
 * anything was written (PARENT_CYCLE, or no such device) is one device's failure; anything else is
 * thrown again and fails the whole edit (its transaction rolls back), in both stores.
 */
export function bulkFailure(given: string, err: unknown): BulkFailure {
  if (!(err instanceof DomainError) || (err.kind !== 'invalid' && err.kind !== 'not-found')) throw err;
  return { mac: given, code: err.code, message: err.message };
}

/** A merge's `from` that is already a MAC of device `owner` (both stores refuse it). */
export const alreadyMergedError = (from: string, owner: string, target: string): DomainError =>
  new DomainError(
    'conflict',
    `${from} is already a MAC of device ${owner}${owner === target ? '' : '; merge that device, or split the MAC first'}.`,
    { code: 'ALREADY_MERGED' },
  );

export const sameDeviceError = (to: string, from: string): DomainError =>
  new DomainError('invalid', `${to} and ${from} are the same device.`, { code: 'SAME_DEVICE' });

/** A split of `alias`, which is not an alias of device `owner`. */
export const notAnAliasError = (alias: string, owner: string): DomainError =>
  new DomainError(
    'invalid',
    alias === owner
      ? `${alias} is the device's own MAC; only an alias can be split off.`
      : `${alias} is not an alias of device ${owner}.`,
    { code: 'NOT_AN_ALIAS' },
  );

/**
 * The synchronous SQLite device engine behind `SqliteDeviceStore` (device-store.ts), which gives
 * the store's asynchronous interface. The other SQLite parts (outbox, watch, compat) write through
 * its `write` (group commit) and join its transactions.
 */
export class SqliteDevices {
  private readonly resolveStmt: Statement<[string], string>;
  private readonly aliasesStmt: Statement<[string], string>;
  private readonly loadAliasesStmt: Statement<[], { alias: string; devMac: string }>;
  private readonly insertAliasStmt: Statement<
    [{ mac: string; devMac: string; firstSeen: string | null; lastSeen: string | null; reason: string }]
  >;
  private readonly aliasSeenStmt: Statement<[string, string]>;
  private readonly deleteAliasesOfStmt: Statement<[string]>;
  private readonly deleteAliasStmt: Statement<[{ alias: string; devMac: string }], SeenTimes>;
  private readonly moveAliasesStmt: Statement<[{ from: string; to: string }]>;
  private readonly pruneAliasesStmt: Statement<[]>;
  private readonly seenTimesStmt: Statement<[string], SeenTimes>;
  private readonly mergeFieldsStmt: Statement<[{ from: string; to: string }]>;
  private readonly closeFromSessionStmt: Statement<[{ from: string; to: string; now: string }]>;
  private readonly moveEventsStmt: Statement<[{ from: string; to: string }]>;
  private readonly moveSessionsStmt: Statement<[{ from: string; to: string }]>;
  private readonly moveChildrenStmt: Statement<[{ from: string; to: string }]>;
  private readonly mergeTx: (to: string, from: string, now: Date) => MacsResult;
  private readonly splitTx: (mac: string, alias: string, now: Date) => MacsResult & { split: string };
  /** `deviceSql.select`: a device's row as lists show it. */
  private readonly selectRow: (mac: string) => DeviceRow | undefined;
  /** `deviceSql.view`: a device's row as GET /device shows it. */
  private readonly viewRow: (mac: string) => ViewRow | undefined;
  private readonly searchTextsStmt: Statement<[], SearchTexts>;
  private readonly searchTextsOfStmt: Statement<[string], SearchTexts>;
  private readonly existsStmt: Statement<[string]>;
  private readonly insertStmt: Statement<[Record<string, DbValue>]>;
  private readonly updateStmt: Statement<[Record<string, DbValue>]>;
  /** `updateOneSql` per field, prepared on its first use. */
  private readonly updateOneStmts = new Map<string, Statement<[{ mac: string; value: DbValue }]>>();
  private readonly deleteStmt: Statement<[string]>;
  private readonly deleteEventsStmt: Statement<[string]>;
  private readonly deleteSessionsStmt: Statement<[string]>;
  private readonly orphanChildrenStmt: Statement<[string]>;
  private readonly parentCycleStmt: Statement<[{ parent: string; child: string }]>;
  private readonly resetPropsStmt: Statement<[string, string]>;
  private readonly copyStmt: Statement<[{ from: string; to: string; guid: string }]>;
  private readonly childrenStmt: Statement<[string], ChildRow>;
  /**
   * The kept counts (see `counts()`), their reader, and each device's counters as bits (read when
   * this process's writes need them; undefined after a recount).
   */
  private readonly countsReader: ChangeReader;
  private counterBits: Map<string, number> | undefined;
  private countValues: number[] = deviceCounters.map(() => 0);
  private countsObject: DeviceCounts | undefined;
  private readonly allBitsStmt: Statement<[], [string, number]>;
  private readonly countsStmt: Statement<[], number[]>;
  private readonly oneBitsStmt: Statement<[string], { devMac: string; bits: number }>;
  private readonly deleteScanStateStmt: Statement<[string]>;
  private readonly eventsPageStmt: Statement<[{ mac: string; start: string } & Page], EventRow>;
  private readonly eventsTotalStmt: Statement<[{ mac: string; start: string }], number>;
  private readonly sessionsPageStmt: Statement<[{ mac: string; start: string } & Page], SessionRow>;
  private readonly sessionsTotalStmt: Statement<[{ mac: string; start: string }], number>;
  private readonly loadNamesStmt: Statement<[], NameRow>;
  private readonly getNameStmt: Statement<[string], NameRow>;
  private readonly setNameStmt: Statement<[NameUpdate]>;
  private readonly markNameWrittenStmt: Statement<[{ mac: string; source: string }]>;
  /** Prepared on first use and kept, keyed by SQL text: one entry per list shape (a few hundred at most). */
  private readonly listStmts = new Map<string, ListStatements>();
  /** Runs a read in one transaction, so a page and its total come from one snapshot. */
  private readonly readTx: <T>(read: () => T) => T;
  private readonly deleteTx: (mac: string) => boolean;
  private readonly deleteEventsTx: (mac: string) => boolean;
  private readonly copyTx: (from: string, to: string) => boolean;
  private readonly createTx: (row: Record<string, DbValue>) => CreateResult;
  private readonly deletePortsStmt: Statement<[string]>;
  private readonly deletePortMemoryStmt: Statement<[string]>;
  /** The connection's group commit (the WAL checkpointer pauses it for its last pass). */
  readonly commits: GroupCommit;
  /** Which devices this connection's writes changed; whether another process committed. */
  private readonly tracking: ChangeTracking;
  /** The counts of a device for a period (read inside a read transaction). */
  private readonly periods: PeriodStatistics;
  /** The scanner's reads and a cycle's writes. */
  readonly presence: SqlitePresence;

  constructor(private readonly db: Database) {
    this.resolveStmt = db.prepare<[string], string>(macSql.resolve).pluck();
    this.aliasesStmt = db.prepare<[string], string>(macSql.aliases).pluck();
    this.loadAliasesStmt = db.prepare(macSql.loadAliases);
    this.insertAliasStmt = db.prepare(macSql.insert);
    this.aliasSeenStmt = db.prepare(macSql.seen);
    this.deleteAliasesOfStmt = db.prepare(macSql.deleteOf);
    this.deleteAliasStmt = db.prepare(macSql.deleteAlias);
    this.moveAliasesStmt = db.prepare(macSql.moveAliases);
    this.pruneAliasesStmt = db.prepare(macSql.prune);
    this.seenTimesStmt = db.prepare(macSql.seenTimes);
    this.mergeFieldsStmt = db.prepare(macSql.mergeFields);
    this.closeFromSessionStmt = db.prepare(macSql.closeFromSession);
    this.moveEventsStmt = db.prepare(macSql.moveEvents);
    this.moveSessionsStmt = db.prepare(macSql.moveSessions);
    this.moveChildrenStmt = db.prepare(macSql.moveChildren);
    this.selectRow = rowGetter(db.prepare<[string], DeviceRow>(deviceSql.select));
    this.viewRow = rowGetter(db.prepare<[string], ViewRow>(deviceSql.view));
    this.searchTextsStmt = db.prepare(searchTextsSql);
    this.searchTextsOfStmt = db.prepare(deviceSql.searchTextsOf);
    this.existsStmt = db.prepare(deviceSql.exists).pluck();
    this.insertStmt = db.prepare(deviceSql.insert);
    this.updateStmt = db.prepare(deviceSql.update);
    this.deleteStmt = db.prepare(deviceSql.delete);
    this.deleteEventsStmt = db.prepare(deviceSql.deleteEvents);
    this.deleteSessionsStmt = db.prepare(deviceSql.deleteSessions);
    this.orphanChildrenStmt = db.prepare(deviceSql.orphanChildren);
    this.parentCycleStmt = db.prepare(deviceSql.parentCycle);
    this.resetPropsStmt = db.prepare(deviceSql.resetProps);
    this.copyStmt = db.prepare(deviceSql.copy);
    this.childrenStmt = db.prepare(deviceSql.children);
    this.periods = new PeriodStatistics(db);
    this.tracking = new ChangeTracking(db);
    this.presence = new SqlitePresence(db, (write) => this.tracking.logOnce(write));
    registerListFunctions(db);
    this.deleteScanStateStmt = db.prepare(deviceSql.deleteScanState);
    this.deletePortsStmt = db.prepare(watchSql.deleteDevicePorts);
    this.deletePortMemoryStmt = db.prepare(watchSql.deleteDeviceMemory);
    this.eventsPageStmt = db.prepare(deviceSql.eventsPage);
    this.eventsTotalStmt = db
      .prepare<[{ mac: string; start: string }], number>(deviceSql.eventsTotal)
      .pluck();
    this.sessionsPageStmt = db.prepare(deviceSql.sessionsPage);
    this.sessionsTotalStmt = db
      .prepare<[{ mac: string; start: string }], number>(deviceSql.sessionsTotal)
      .pluck();
    this.allBitsStmt = db.prepare<[], [string, number]>(deviceCounterBitsSql).raw();
    this.countsStmt = db.prepare<[], number[]>(deviceCountsSql).raw();
    this.oneBitsStmt = db.prepare(`${deviceCounterBitsSql} WHERE devMac = ?`);
    this.countsReader = this.changeReader();
    this.loadNamesStmt = db.prepare(nameSql.load);
    this.getNameStmt = db.prepare(nameSql.get);
    this.setNameStmt = db.prepare(nameSql.set);
    this.markNameWrittenStmt = db.prepare(nameSql.markWritten);
    const read = db.transaction((fn: () => unknown) => fn());
    this.readTx = <T>(fn: () => T): T => read(fn) as T;
    this.commits = new GroupCommit(db);

    this.createTx = db.transaction((row: Record<string, DbValue>): CreateResult => {
      const mac = row.devMac as string;
      if (this.existsStmt.get(mac) !== undefined || this.resolveStmt.get(mac) !== undefined) return 'exists';
      this.insertStmt.run(row);
      return 'created';
    });
    this.deleteTx = db.transaction((mac: string): boolean => {
      if (this.deleteStmt.run(mac).changes === 0) return false;
      this.deleteAliasesOfStmt.run(mac);
      this.deleteEventsStmt.run(mac);
      this.deleteSessionsStmt.run(mac);
      this.deleteScanStateStmt.run(mac);
      this.deletePortsStmt.run(mac);
      this.deletePortMemoryStmt.run(mac);
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
    this.copyTx = db.transaction((fromMac: string, toMac: string): boolean => {
      // Either MAC may be an alias: the copy is between the devices that have them.
      const from = this.resolveMac(fromMac);
      const to = this.resolveMac(toMac);
      if (from === to) return this.existsStmt.get(from) !== undefined;
      if (this.copyStmt.run({ from, to, guid: randomUUID() }).changes === 0) return false;
      this.deleteScanStateStmt.run(to);
      // A copy writes devName through the API: it is the user's name now.
      this.markNameWrittenStmt.run({ mac: to, source: 'user' });
      return true;
    });
    this.mergeTx = db.transaction((to: string, from: string, now: Date): MacsResult => {
      const target = this.resolveMac(to);
      if (this.existsStmt.get(target) === undefined) throw notFoundError(to);
      const owner = this.resolveStmt.get(from);
      if (owner !== undefined) throw alreadyMergedError(from, owner, target);
      if (this.existsStmt.get(from) === undefined) throw notFoundError(from);
      if (from === target) throw sameDeviceError(to, from);
      const params = { from, to: target };
      const seen = this.seenTimesStmt.get(from);
      this.mergeFieldsStmt.run(params);
      this.moveChildrenStmt.run(params);
      this.closeFromSessionStmt.run({ ...params, now: dbTime(now) });
      this.moveEventsStmt.run(params);
      this.moveSessionsStmt.run(params);
      this.moveAliasesStmt.run(params);
      this.deleteScanStateStmt.run(from);
      this.deleteStmt.run(from);
      this.insertAliasStmt.run({
        mac: from,
        devMac: target,
        firstSeen: seen?.firstSeen ?? null,
        lastSeen: seen?.lastSeen ?? null,
        reason: 'merge',
      });
      return { devMac: target, devMacs: this.macsOf(target) };
    });
    this.splitTx = db.transaction((mac: string, alias: string, now: Date) => {
      const owner = this.resolveMac(mac);
      if (this.existsStmt.get(owner) === undefined) throw notFoundError(mac);
      const seen = this.deleteAliasStmt.get({ alias, devMac: owner });
      if (seen === undefined) throw notAnAliasError(alias, owner);
      const nowText = dbTime(now);
      // A device of its own again, with no history: what was recorded stays with the device.
      this.insertStmt.run(
        newDeviceRow(alias, {
          devFirstConnection: seen.firstSeen ?? nowText,
          devLastConnection: seen.lastSeen ?? nowText,
          devPresentLastScan: 0,
        }),
      );
      return { devMac: owner, devMacs: this.macsOf(owner), split: alias };
    });
  }

  resolveMac(mac: string): string {
    return this.resolveStmt.get(mac) ?? mac;
  }

  loadAliases(): Map<string, string> {
    const aliases = new Map<string, string>();
    for (const row of this.loadAliasesStmt.iterate()) aliases.set(row.alias, row.devMac);
    return aliases;
  }

  merge(to: string, from: string, now: Date): MacsResult {
    return this.mergeTx(to, from, now);
  }

  split(mac: string, alias: string, now: Date): MacsResult & { readonly split: string } {
    return this.splitTx(mac, alias, now);
  }

  private macsOf(mac: string): string[] {
    return withOwn(mac, this.aliasesStmt.all(mac));
  }

  get(mac: string, period: Period, now: Date): DeviceView | undefined {
    return this.getTimed(mac, period, now)?.view;
  }

  changeReader(): ChangeReader {
    return this.tracking.reader();
  }

  write<T>(write: () => T): Promise<T> {
    return this.commits.run(write);
  }

  getTimed(mac: string, period: Period, now: Date): TimedView | undefined {
    return this.readTx(() => {
      const row = this.viewRow(mac);
      if (row === undefined) return undefined;
      const { stats, seconds, slope, until } = this.periods.of(mac, period, now);
      const view = deviceViewOf(
        row,
        row.viewHasAliases === 1 ? this.macsOf(mac) : withOwn(mac, []),
        row.viewHasChildren === 1 ? this.listChildren(mac) : [],
        stats,
      );
      return { view, seconds, slope, until: until === null ? null : new Date(until) };
    });
  }

  create(mac: string, changes: DeviceChanges, now: Date): CreateResult {
    this.refuseParentCycle(mac, changes.devParentMAC);
    const nowText = dbTime(now);
    return this.createTx(
      newDeviceRow(
        mac,
        withNameSource(
          { devFirstConnection: nowText, devLastConnection: nowText, ...toColumns(changes) },
          'user',
        ),
      ),
    );
  }

  update(mac: string, changes: DeviceChanges): boolean {
    this.refuseParentCycle(mac, changes.devParentMAC);
    const updated = this.updateFields(mac, changes);
    // Any devName written through the API is the user's (or, when it is no name, none at all).
    if (updated && Object.hasOwn(changes, 'devName')) this.markNameWrittenStmt.run({ mac, source: 'user' });
    return updated;
  }

  private updateFields(mac: string, changes: DeviceChanges): boolean {
    const columns = toColumns(changes);
    const given = Object.keys(columns);
    if (given.length === 1 && given[0] !== undefined) {
      const name = given[0];
      let statement = this.updateOneStmts.get(name);
      if (statement === undefined) {
        statement = this.db.prepare(updateOneSql(name));
        this.updateOneStmts.set(name, statement);
      }
      return statement.run({ mac, value: columns[name] ?? null }).changes > 0;
    }
    const params: Record<string, DbValue> = { mac };
    for (const name of editableNames) {
      const given = Object.hasOwn(columns, name);
      params[`set_${name}`] = given ? 1 : 0;
      params[name] = given ? (columns[name] ?? null) : null;
    }
    return this.updateStmt.run(params).changes > 0;
  }

  /** A device may not hang under itself or under one of its own descendants (the tree would loop). */
  private refuseParentCycle(mac: string, parent: DeviceValue | undefined): void {
    if (typeof parent !== 'string' || parent === '') return;
    if (this.parentCycleStmt.get({ parent, child: mac }) === undefined) return;
    throw parentCycleError(mac, parent);
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

  bulkEdit(macs: readonly string[], edit: BulkEdit): BulkResult {
    const result: BulkResult = { changed: [], failed: [] };
    const seen = new Set<string>();
    for (const given of macs) {
      const mac = this.resolveMac(given);
      if (seen.has(mac)) continue; // a MAC and its alias, or the same MAC twice: one device
      seen.add(mac);
      try {
        const done = 'delete' in edit ? this.delete(mac) : this.update(mac, edit.set);
        if (done) result.changed.push(mac);
        else result.failed.push(bulkFailure(given, notFoundError(given)));
      } catch (err) {
        result.failed.push(bulkFailure(given, err));
      }
    }
    return result;
  }

  listChildren(mac: string): DeviceChild[] {
    return this.childrenStmt.all(mac).map(childOf);
  }

  listDevices(query: DeviceListQuery, page: Page): PageResult<DeviceListItem> {
    const statements = this.listStatements(query);
    const search = listParams(query);
    return this.readTx(() => ({
      items: statements.page.all({ ...search, ...page }).map(deviceListItemOf),
      total: statements.total.get(search) ?? 0,
    }));
  }

  listOrder(query: DeviceListQuery): string[] {
    return this.listStatements(query).order.all(listParams(query));
  }

  listItems(macs: readonly string[]): (DeviceListItem | undefined)[] {
    return this.readTx(() =>
      macs.map((mac) => {
        const row = this.selectRow(mac);
        return row === undefined ? undefined : deviceListItemOf(row);
      }),
    );
  }

  searchTexts(macs?: readonly string[]): SearchTexts[] {
    if (macs === undefined) return this.searchTextsStmt.all();
    return this.readTx(() =>
      macs.map((mac) => this.searchTextsOfStmt.get(mac)).filter((row) => row !== undefined),
    );
  }

  totals(counts: DeviceCounts = this.counts()): DeviceTotals {
    return Object.fromEntries(deviceGroups.map((group) => [group, counts[group]])) as DeviceTotals;
  }

  /**
   * The counts are kept in memory. This process's writes name the devices they touched (the
   * change reader), whose counters are read again (one row each, as bits) and moved between the
   * counts; a commit by another process, or a change of many devices at once, recounts every
   * device in one pass. Between changes, a read costs the commit probe and nothing else.
   */
  counts(): DeviceCounts {
    return this.countsAfter(this.countsReader.poll());
  }

  /**
   * `counts()` after a look at the database shared with every caller of this turn of the event
   * loop (`pollShared`): what requests ask for, so that a dashboard's polls do not each read the
   * WAL-index.
   */
  async countsShared(): Promise<DeviceCounts> {
    return this.countsAfter((await this.countsReader.pollShared()).changes);
  }

  private countsAfter(changes: Changes): DeviceCounts {
    if (this.countsObject === undefined || changes === 'all' || changes.size > recountAbove) this.countAll();
    else if (changes.size > 0) this.countDevices(changes);
    return this.countsObject ?? this.countAll();
  }

  /**
   * The counts in one pass in SQLite, without each device's bits (reading those takes several
   * times as long: a JavaScript value per device); they are read only when this process's own
   * writes need them.
   */
  private countAll(): DeviceCounts {
    const row = this.countsStmt.get() ?? [];
    this.countValues = deviceCounters.map((_, i) => row[i] ?? 0);
    this.counterBits = undefined;
    return this.newCounts();
  }

  /** The counts after this process's writes to `changed`: each device's bits read again. */
  private countDevices(changed: ReadonlySet<string>): void {
    this.readTx(() => {
      const bits = this.counterBits ?? this.readAllBits();
      for (const mac of changed) {
        const before = bits.get(mac);
        const after = this.oneBitsStmt.get(mac)?.bits;
        if (before === after) continue;
        if (before !== undefined) this.addBits(before, -1);
        if (after === undefined) bits.delete(mac);
        else {
          bits.set(mac, after);
          this.addBits(after, 1);
        }
      }
    });
    this.newCounts();
  }

  /** Every device's bits, and the counts from them. */
  private readAllBits(): Map<string, number> {
    const bits = new Map<string, number>();
    this.countValues = deviceCounters.map(() => 0);
    for (const [mac, value] of this.allBitsStmt.all()) {
      bits.set(mac, value);
      this.addBits(value, 1);
    }
    this.counterBits = bits;
    return bits;
  }

  private newCounts(): DeviceCounts {
    this.countsObject = Object.fromEntries(
      deviceCounters.map((counter, i) => [counter, this.countValues[i] ?? 0]),
    ) as Record<DeviceCounter, number>;
    return this.countsObject;
  }

  private addBits(bits: number, sign: 1 | -1): void {
    for (let i = 0; i < deviceCounters.length; i++)
      if ((bits & (1 << i)) !== 0) this.countValues[i] = (this.countValues[i] ?? 0) + sign;
  }

  private listStatements(query: DeviceListQuery): ListStatements {
    const sql = deviceListStatements(query);
    let statements = this.listStmts.get(sql.page);
    if (statements === undefined) {
      statements = {
        page: this.db.prepare(sql.page),
        total: this.db.prepare<[Record<string, unknown>], number>(sql.total).pluck(),
        order: this.db.prepare<[Record<string, unknown>], string>(sql.order).pluck(),
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
    return this.readTx(() => this.periods.of(mac, period, now).stats);
  }

  loadNames(): Map<string, StoredDeviceName> {
    const names = new Map<string, StoredDeviceName>();
    for (const row of this.loadNamesStmt.iterate()) names.set(row.devMac, nameOf(row));
    return names;
  }

  getName(mac: string): StoredDeviceName | undefined {
    const row = this.getNameStmt.get(mac);
    return row === undefined ? undefined : nameOf(row);
  }

  setName(update: NameUpdate): boolean {
    return this.setNameStmt.run(update).changes > 0;
  }
}

/**
 * GET /device's view of a device (both stores): its row read with the presence flags (0/1), all
 * its MACs (its own first), its children and its counts for the period.
 */
export function deviceViewOf(
  row: DeviceRow,
  macs: string[],
  children: DeviceChild[],
  stats: DeviceStats,
): DeviceView {
  const view: DeviceListItem & Partial<{ -readonly [K in keyof DeviceView]: DeviceView[K] }> =
    deviceListItemOf(row);
  view.devMacs = macs;
  view.devSessions = stats.devSessions;
  view.devEvents = stats.devEvents;
  view.devDownAlerts = stats.devDownAlerts;
  view.devPresenceHours = stats.devPresenceHours;
  view.devChildrenDynamic = children;
  view.devChildrenNicsDynamic = children.filter((c) => c.devParentRelType === 'nic');
  return view as DeviceView;
}

/**
 * A row read with `presenceFlagColumns` as GET /devices lists it (both stores): its stored fields,
 * then devStatus, the presence flags and devRandomMac, in that order.
 *
 * Built by assignment onto one object, never by spreading the row's ~40 fields into a literal: V8
 * builds a spread of that size slowly, and the spreads took about half of a device read (~50 of
 * ~100 µs of CPU for a GET that misses the cache, 5-6 µs this way).
 */
export function deviceListItemOf(row: DeviceRow): DeviceListItem {
  const item = rowToJson(row) as DeviceListItem;
  item.devStatus = deviceStatus(row.devPresentLastScan as number, row.devAlertDown as number);
  item.devSleeping = row.devSleeping === 1 ? 1 : 0;
  item.devFlapping = row.devFlapping === 1 ? 1 : 0;
  item.devRandomMac = isRandomMac(row.devMac as string) ? 1 : 0;
  return item;
}

/** A child device as devChildrenDynamic lists it. */
export function childOf(c: ChildRow): DeviceChild {
  return {
    devMac: c.devMac,
    devName: c.devName,
    devStatus: deviceStatus(c.devPresentLastScan, c.devAlertDown),
    devParentRelType: c.devParentRelType,
    devParentPort: c.devParentPort,
    devLastIP: c.devLastIP,
  };
}

/** devParentMAC `parent` for `mac` would close a loop in the network tree (both stores refuse it). */
export function parentCycleError(mac: string, parent: string): DomainError {
  return new DomainError(
    'invalid',
    parent === mac
      ? `devParentMAC: ${mac} cannot be its own parent.`
      : `devParentMAC: ${parent} is below ${mac} in the network tree; ${mac} under it would make a loop. Move ${parent} elsewhere first.`,
    { code: 'PARENT_CYCLE' },
  );
}
