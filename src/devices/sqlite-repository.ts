/**
 * The SQLite device store (the interface is repository.ts, the SQL text sqlite-sql.ts). Statements
 * are prepared once, in the constructor; every change that touches more than one statement runs in
 * one transaction. Values cross the interface in storage-neutral form and are turned into column
 * values (times as `YYYY-MM-DD HH:MM:SS` text) here.
 *
 * Per-device counts are read from the rows the triggers of the migrations keep (see `countSql`),
 * not recounted; a device with irregular history rows (times that are not canonical storage text)
 * is recounted from the raw rows for periods other than `all`, with the statements that define
 * the counts.
 */
import { randomUUID } from 'node:crypto';
import { DomainError } from '../errors.js';
import { isRandomMac } from '../validation.js';
import type { Database, Statement, Transaction } from 'better-sqlite3';
import { GroupCommit } from '../db/group-commit.js';
import { CommitProbe } from '../db/commit-probe.js';
import { dbTime, fromDbTime, periodStart, periods, type Period } from '../time.js';
import {
  defaultDeviceJson,
  editableFields,
  fieldValueToColumn,
  fieldsByName,
  jsonToColumns,
  rowToJson,
  withNameSource,
  type DbValue,
  type DeviceRow,
} from './catalogue.js';
import {
  eventToJson,
  sessionToJson,
  type EventJson,
  type EventRow,
  type SessionJson,
  type SessionRow,
} from './history.js';
import type { KnownDevice, NameUpdate, PresenceChanges, SiteMark, StoredDeviceName } from './presence.js';
import {
  presenceHours,
  type ApplyHooks,
  type BulkEdit,
  type BulkResult,
  type ChangeReader,
  type Changes,
  type CreateResult,
  type DeviceChanges,
  type DeviceChild,
  type DeviceCounts,
  type DeviceListItem,
  type DeviceTotals,
  type DeviceRepository,
  type DeviceStats,
  type DeviceValue,
  type DeviceView,
  type MacsResult,
  type Page,
  type PageResult,
  type PresenceFlags,
  type PruneResult,
  type TimedView,
} from './repository.js';
import {
  changedDeviceFunction,
  dataVersionSql,
  changeTrackingSql,
  countSql,
  deviceListStatements,
  updateOneSql,
  deviceSql,
  macSql,
  nameSql,
  presenceSql,
} from './sqlite-sql.js';
import { listParams, naturalKey, naturalKeyFunction, type DeviceListQuery } from './list-query.js';
import {
  deviceCounterBitsSql,
  deviceCounters,
  deviceCountsSql,
  deviceGroups,
  deviceStatus,
  type DeviceCounter,
} from './status.js';
import { watchSql } from './watch-store.js';

interface ListStatements {
  readonly page: Statement<[Record<string, unknown>], DeviceRow>;
  readonly total: Statement<[Record<string, unknown>], number>;
  readonly order: Statement<[Record<string, unknown>], string>;
}

/** What one change reader has not polled yet. */
interface ReaderState {
  pending: Set<string> | 'all';
}

/**
 * Above this many devices changed at once (a scan cycle), the kept counts are recounted in one
 * pass instead of device by device.
 */
const recountAbove = 256;

interface ChildRow {
  devMac: string;
  devName: string;
  devPresentLastScan: number;
  devAlertDown: number;
  devParentRelType: string;
  devParentPort: number | null;
  devLastIP: string;
}

interface NameRow {
  devMac: string;
  devName: string;
  devNameSource: string;
  devFQDN: string;
  devLastIP: string;
}

const nameOf = (row: NameRow): StoredDeviceName => ({
  name: row.devName,
  source: row.devNameSource,
  fqdn: row.devFQDN,
  ip: row.devLastIP,
});

interface StateRow {
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

interface TotalsRow {
  events: number;
  downAlerts: number;
  sessions: number;
  closedSeconds: number;
  irregular: number;
}

interface OpenRow {
  sessions: number;
  seconds: number;
  growing: number;
  nextStart: string | null;
  irregular: number;
}

interface NextChangeRow {
  event: string | null;
  ended: string | null;
  started: string | null;
}

interface BucketsRow {
  events: number;
  downAlerts: number;
  ended: number;
  endedSum: number;
  started: number;
  startedSum: number;
}

interface EdgeParams {
  mac: string;
  start: string;
  dayFrom: string;
}

/** Period statistics with how they follow the clock (see TimedView). */
interface PeriodStats {
  readonly stats: DeviceStats;
  readonly seconds: number;
  readonly slope: number;
  /** Unix milliseconds; null: until a write. */
  readonly until: number | null;
}

const editableNames = editableFields.map((f) => f.name);
const defaultColumns: Readonly<Record<string, DbValue>> = jsonToColumns(defaultDeviceJson());
const defaultCustomProps = defaultColumns.devCustomProps ?? '[]';
const noTotals: TotalsRow = { events: 0, downAlerts: 0, sessions: 0, closedSeconds: 0, irregular: 0 };
const noOpen: OpenRow = { sessions: 0, seconds: 0, growing: 0, nextStart: null, irregular: 0 };

/** Storage text as Unix milliseconds (NaN when it is not a time). */
const textMs = (text: string): number => Date.parse(fromDbTime(text));
const nothingChanged: ReadonlySet<string> = new Set();

/**
 * The row of a new device, however it is made (POST createNew or the scanner): the catalogue
 * defaults, then `columns`, then its MAC and a fresh devGUID. Inserted with `deviceSql.insert`.
 */
export function newDeviceRow(mac: string, columns: Readonly<DeviceRow>): DeviceRow {
  return { ...defaultColumns, ...columns, devMac: mac, devGUID: randomUUID() };
}

/** Editable field values as column values; RangeError for a name outside the editable catalogue. */
function toColumns(changes: DeviceChanges): DeviceRow {
  const row: DeviceRow = {};
  for (const [name, value] of Object.entries(changes)) {
    const f = fieldsByName.get(name);
    if (f?.editable !== true) throw new RangeError(`'${name}' is not an editable device field`);
    row[name] = fieldValueToColumn(f, value);
  }
  return row;
}

/** A Date as storage text, or null. */
const timeText = (value: Date | null): string | null => (value === null ? null : dbTime(value));

/**
 * Where the buckets take over from the raw rows, for a period starting at `start` (storage text):
 * the day after the start's day (`dayFrom`), then whole months from the month after that day's
 * (`monthFrom`, whose first day is `dayTo`).
 */
function bucketBounds(start: string): { dayFrom: string; dayTo: string; monthFrom: string } {
  const day = new Date(`${start.slice(0, 10)}T00:00:00Z`);
  day.setUTCDate(day.getUTCDate() + 1);
  const dayFrom = day.toISOString().slice(0, 10);
  const month = new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth() + 1, 1));
  const monthFrom = month.toISOString().slice(0, 7);
  return { dayFrom, dayTo: `${monthFrom}-01`, monthFrom };
}

interface SeenTimes {
  firstSeen: string | null;
  lastSeen: string | null;
}

/** A device's own MAC first, then its aliases. */
const withOwn = (mac: string, aliases: readonly string[]): string[] => [mac, ...aliases];

const notFoundError = (mac: string): DomainError =>
  new DomainError('not-found', `Device ${mac} not found.`, { code: 'DEVICE_NOT_FOUND' });

export class SqliteDeviceRepository implements DeviceRepository {
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
  private readonly selectStmt: Statement<[string], DeviceRow>;
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
  private readonly eventCountsStmt: Statement<
    [{ mac: string; start: string }],
    { events: number; downAlerts: number }
  >;
  private readonly sessionStatsStmt: Statement<
    [{ mac: string; start: string; now: string }],
    { sessions: number; seconds: number; openSessions: number; latestOpenStart: string | null }
  >;
  private readonly totalsStmt: Statement<[string], TotalsRow>;
  private readonly openStmt: Statement<[{ mac: string; start: string; now: string }], OpenRow>;
  private readonly bucketsStmt: Statement<
    [{ mac: string; dayFrom: string; dayTo: string; monthFrom: string }],
    BucketsRow
  >;
  private readonly edgeEventsStmt: Statement<[EdgeParams], { events: number; downAlerts: number }>;
  private readonly edgeEndedStmt: Statement<[EdgeParams], { n: number; sum: number }>;
  private readonly edgeStartedStmt: Statement<[EdgeParams], { n: number; sum: number }>;
  private readonly nextChangeStmt: Statement<[{ mac: string; start: string }], NextChangeRow>;
  private readonly dataVersionStmt: Statement<[], number>;
  /** Asked before `dataVersionStmt`: whether any commit happened at all (see commit-probe.ts). */
  private readonly commitProbe: CommitProbe;
  /** Devices whose answers this connection's writes changed, not yet handed to the readers. */
  private changedHere = new Set<string>();
  /** Every change reader, each with what it has not polled yet. */
  private readonly readers = new Set<ReaderState>();
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
  private readonly presenceTx: Transaction<(changes: PresenceChanges, hooks: ApplyHooks) => void>;
  private readonly commits: GroupCommit;
  private dataVersion: number;

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
    this.selectStmt = db.prepare(deviceSql.select);
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
    this.eventCountsStmt = db.prepare(deviceSql.eventCounts);
    this.sessionStatsStmt = db.prepare(deviceSql.sessionStats);
    this.totalsStmt = db.prepare(countSql.totals);
    this.openStmt = db.prepare(countSql.openSessions);
    this.bucketsStmt = db.prepare(countSql.buckets);
    this.edgeEventsStmt = db.prepare(countSql.edgeEvents);
    this.edgeEndedStmt = db.prepare(countSql.edgeEnded);
    this.edgeStartedStmt = db.prepare(countSql.edgeStarted);
    this.nextChangeStmt = db.prepare(countSql.nextChange);
    db.function(naturalKeyFunction, { deterministic: true }, (name: unknown) =>
      typeof name === 'string' ? naturalKey(name) : null,
    );
    db.function(changedDeviceFunction, { deterministic: false }, (mac: unknown) => {
      if (typeof mac === 'string') this.changedHere.add(mac);
      return null;
    });
    db.exec(changeTrackingSql);
    this.commitProbe = new CommitProbe(db);
    this.commitProbe.mayHaveChanged();
    this.dataVersionStmt = db.prepare<[], number>(dataVersionSql).pluck();
    this.dataVersion = this.dataVersionStmt.get() ?? 0;
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
    this.loadPresenceStmt = db.prepare(presenceSql.load);
    this.loadScopedStmt = db.prepare(presenceSql.loadScoped);
    this.togglesStmt = db.prepare(presenceSql.toggles);
    this.updatePresenceStmt = db.prepare(presenceSql.updatePresence);
    this.setSiteStmt = db.prepare(presenceSql.setSite);
    this.insertEventStmt = db.prepare(presenceSql.insertEvent);
    this.openSessionStmt = db.prepare(presenceSql.openSession);
    this.closeSessionStmt = db.prepare(presenceSql.closeSession);
    this.upsertScanStateStmt = db.prepare(presenceSql.upsertScanState);
    this.pruneEventsStmt = db.prepare(presenceSql.pruneEvents);
    this.pruneSessionsStmt = db.prepare(presenceSql.pruneSessions);
    this.pruneScanStateStmt = db.prepare(presenceSql.pruneScanState);
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
      if (owner !== undefined)
        throw new DomainError(
          'conflict',
          `${from} is already a MAC of device ${owner}${owner === target ? '' : '; merge that device, or split the MAC first'}.`,
          { code: 'ALREADY_MERGED' },
        );
      if (this.existsStmt.get(from) === undefined) throw notFoundError(from);
      if (from === target)
        throw new DomainError('invalid', `${to} and ${from} are the same device.`, { code: 'SAME_DEVICE' });
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
      if (seen === undefined)
        throw new DomainError(
          'invalid',
          alias === owner
            ? `${alias} is the device's own MAC; only an alias can be split off.`
            : `${alias} is not an alias of device ${owner}.`,
          { code: 'NOT_AN_ALIAS' },
        );
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
    this.presenceTx = db.transaction((changes: PresenceChanges, hooks: ApplyHooks) => {
      this.writePresence(changes);
      hooks.beforeCommit?.();
      hooks.testOnlyBeforeCommit?.();
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
    const state: ReaderState = { pending: new Set() };
    this.readers.add(state);
    return {
      poll: (): Changes => {
        this.collectChanges();
        const pending = state.pending;
        if (pending !== 'all' && pending.size === 0) return nothingChanged;
        state.pending = new Set();
        return pending;
      },
    };
  }

  /**
   * Hands what changed to every reader. The TEMP triggers of `changeTrackingSql` report every
   * device this connection's writes touch; `PRAGMA data_version` moves with every commit by another
   * connection (another process, the sqlite3 CLI), whose rows nothing here can name: then
   * everything may have changed. The commit probe is asked first, so that when nobody committed,
   * the usual case on a read, this costs one small read of the WAL-index and no statement.
   */
  private collectChanges(): void {
    if (!this.commitProbe.mayHaveChanged()) return;
    let version: number;
    try {
      version = this.dataVersionStmt.get() ?? 0;
    } catch (error) {
      // The probe has already taken in the new header: without this, the next poll would see no
      // change and a foreign commit would never be noticed.
      this.commitProbe.forget();
      throw error;
    }
    const changed = this.changedHere;
    if (changed.size > 0) this.changedHere = new Set();
    if (version !== this.dataVersion) {
      this.dataVersion = version;
      for (const reader of this.readers) reader.pending = 'all';
      return;
    }
    if (changed.size === 0) return;
    for (const reader of this.readers) {
      const pending = reader.pending;
      if (pending === 'all') continue;
      if (pending.size === 0) reader.pending = new Set(changed);
      else for (const mac of changed) pending.add(mac);
    }
  }

  write<T>(write: () => T): Promise<T> {
    return this.commits.run(write);
  }

  getTimed(mac: string, period: Period, now: Date): TimedView | undefined {
    return this.readTx(() => {
      const row = this.selectStmt.get(mac);
      if (row === undefined) return undefined;
      const children = this.listChildren(mac);
      const { stats, seconds, slope, until } = this.periodStats(mac, period, now);
      const view: DeviceView = {
        ...rowToJson(row),
        devStatus: deviceStatus(row.devPresentLastScan as number, row.devAlertDown as number),
        ...presenceFlags(row),
        devRandomMac: isRandomMac(mac) ? 1 : 0,
        devMacs: this.macsOf(mac),
        ...stats,
        devChildrenDynamic: children,
        devChildrenNicsDynamic: children.filter((c) => c.devParentRelType === 'nic'),
      };
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
    throw new DomainError(
      'invalid',
      parent === mac
        ? `devParentMAC: ${mac} cannot be its own parent.`
        : `devParentMAC: ${parent} is below ${mac} in the network tree; ${mac} under it would make a loop. Move ${parent} elsewhere first.`,
      { code: 'PARENT_CYCLE' },
    );
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
        else
          result.failed.push({ mac: given, code: 'DEVICE_NOT_FOUND', message: `Device ${given} not found.` });
      } catch (err) {
        // Only a rule refused before anything was written (PARENT_CYCLE) is one device's failure;
        // anything else fails the whole edit (the write's savepoint rolls it back).
        if (!(err instanceof DomainError) || err.kind !== 'invalid') throw err;
        result.failed.push({ mac: given, code: err.code, message: err.message });
      }
    }
    return result;
  }

  updateColumn(mac: string, column: string, value: DeviceValue): boolean {
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
    const search = listParams(query);
    return this.readTx(() => ({
      items: statements.page.all({ ...search, ...page }).map((row) => ({
        ...rowToJson(row),
        devStatus: deviceStatus(row.devPresentLastScan as number, row.devAlertDown as number),
        ...presenceFlags(row),
        devRandomMac: isRandomMac(row.devMac as string) ? (1 as const) : (0 as const),
      })),
      total: statements.total.get(search) ?? 0,
    }));
  }

  listOrder(query: DeviceListQuery): string[] {
    return this.listStatements(query).order.all(listParams(query));
  }

  listItems(macs: readonly string[]): (DeviceListItem | undefined)[] {
    return this.readTx(() =>
      macs.map((mac) => {
        const row = this.selectStmt.get(mac);
        return row === undefined
          ? undefined
          : {
              ...rowToJson(row),
              devStatus: deviceStatus(row.devPresentLastScan as number, row.devAlertDown as number),
              ...presenceFlags(row),
              devRandomMac: isRandomMac(mac) ? (1 as const) : (0 as const),
            };
      }),
    );
  }

  totals(): DeviceTotals {
    const counts = this.counts();
    return Object.fromEntries(deviceGroups.map((group) => [group, counts[group]])) as DeviceTotals;
  }

  /**
   * The counts are kept in memory. This process's writes name the devices they touched (the
   * change reader), whose counters are read again (one row each, as bits) and moved between the
   * counts; a commit by another process, or a change of many devices at once, recounts every
   * device in one pass. Between changes, a read costs the commit probe and nothing else.
   */
  counts(): DeviceCounts {
    const changes = this.countsReader.poll();
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
    return this.readTx(() => this.periodStats(mac, period, now).stats);
  }

  loadPresence(toggleSince: Date | null = null): Map<string, KnownDevice> {
    return this.presenceOf(this.loadPresenceStmt.iterate(), toggleSince);
  }

  loadSitePresence(
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
      known.set(row.devMac, {
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
        recentToggles: toggles.get(row.devMac) ?? 0,
        site: row.devSite,
      });
    }
    return known;
  }

  applyPresence(changes: PresenceChanges, hooks: ApplyHooks = {}): void {
    this.presenceTx.immediate(changes, hooks);
  }

  pruneHistory(before: Date, limit: number): PruneResult {
    const cutoff = dbTime(before);
    return {
      events: this.pruneEventsStmt.run(cutoff, limit).changes,
      sessions: this.pruneSessionsStmt.run(cutoff, limit).changes,
    };
  }

  pruneScanMemory(): void {
    this.pruneScanStateStmt.run();
    this.pruneAliasesStmt.run();
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

  private writePresence(changes: PresenceChanges): void {
    for (const device of changes.newDevices)
      this.insertStmt.run(newDeviceRow(device.devMac, jsonToColumns(device)));
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

  /** The counts of one period; run inside a read transaction (one snapshot). */
  private periodStats(mac: string, period: Period, now: Date): PeriodStats {
    const start = periodStart(period, now) ?? '';
    const nowText = dbTime(now);
    const totals = this.totalsStmt.get(mac) ?? noTotals;
    if (period !== 'all' && totals.irregular > 0) return this.recount(mac, start, nowText, now);
    const open = this.openStmt.get({ mac, start, now: nowText }) ?? noOpen;
    let events = totals.events;
    let downAlerts = totals.downAlerts;
    let sessions = totals.sessions;
    let seconds = totals.closedSeconds + open.seconds;
    let slope = open.growing;
    // When the answer stops following the clock alone: a future open session starts, or (for a
    // period) the moving start passes the next event or session boundary.
    const changes: number[] = [];
    if (open.nextStart !== null) changes.push(textMs(open.nextStart));
    if (open.irregular > 0) changes.push(now.getTime());
    if (period !== 'all') {
      // Closed sessions that end after the start: those ending on later days are in the buckets
      // by their end, those ending on the start's day are read raw. Their connected seconds within
      // the period are sum(end) - sum(max(start of session, period start)); the sessions that
      // started at or after the period start are likewise in the buckets by their start.
      const bounds = bucketBounds(start);
      const edge = { mac, start, dayFrom: bounds.dayFrom };
      const buckets = this.bucketsStmt.get({ mac, ...bounds });
      const edgeEvents = this.edgeEventsStmt.get(edge);
      const ended = this.edgeEndedStmt.get(edge);
      const started = this.edgeStartedStmt.get(edge);
      const endedCount = (buckets?.ended ?? 0) + (ended?.n ?? 0);
      const endedSum = (buckets?.endedSum ?? 0) + (ended?.sum ?? 0);
      const startedCount = (buckets?.started ?? 0) + (started?.n ?? 0);
      const startedSum = (buckets?.startedSum ?? 0) + (started?.sum ?? 0);
      const startSeconds = textMs(start) / 1000;
      events = (buckets?.events ?? 0) + (edgeEvents?.events ?? 0);
      downAlerts = (buckets?.downAlerts ?? 0) + (edgeEvents?.downAlerts ?? 0);
      sessions = endedCount + open.sessions;
      seconds = endedSum - startedSum - startSeconds * (endedCount - startedCount) + open.seconds;
      // Each closed session that straddles the start loses a second per second as it moves.
      slope -= endedCount - startedCount;
      const next = this.nextChangeStmt.get({ mac, start });
      const length = periods[period] * 86_400_000;
      for (const text of [next?.event, next?.ended, next?.started])
        if (text !== null && text !== undefined) changes.push(textMs(text) + length);
    }
    return {
      stats: {
        devSessions: sessions,
        devEvents: events,
        devDownAlerts: downAlerts,
        devPresenceHours: presenceHours(seconds),
      },
      seconds,
      slope,
      until: earliest(changes, now),
    };
  }

  /** The counts from the raw rows, with the statements that define them (not cacheable). */
  private recount(mac: string, start: string, now: string, at: Date): PeriodStats {
    const events = this.eventCountsStmt.get({ mac, start });
    const sessions = this.sessionStatsStmt.get({ mac, start, now });
    const seconds = sessions?.seconds ?? 0;
    return {
      stats: {
        devSessions: sessions?.sessions ?? 0,
        devEvents: events?.events ?? 0,
        devDownAlerts: events?.downAlerts ?? 0,
        devPresenceHours: presenceHours(seconds),
      },
      seconds,
      slope: 0,
      until: at.getTime(),
    };
  }
}

/** devLastConnection as a Date; null when never seen or not a time (e.g. imported text). */
function lastSighting(text: string | null): Date | null {
  if (text === null) return null;
  const ms = Date.parse(fromDbTime(text));
  return Number.isNaN(ms) ? null : new Date(ms);
}

/** devSleeping and devFlapping of a row read with `presenceFlagColumns` (SQLite gives 0/1). */
function presenceFlags(row: DeviceRow): PresenceFlags {
  return { devSleeping: row.devSleeping === 1 ? 1 : 0, devFlapping: row.devFlapping === 1 ? 1 : 0 };
}

/** The earliest of `times` (Unix ms); `now` when one is not a time; null when there are none. */
function earliest(times: readonly number[], now: Date): number | null {
  let result: number | null = null;
  for (const time of times) {
    if (Number.isNaN(time)) return now.getTime();
    if (result === null || time < result) result = time;
  }
  return result;
}
