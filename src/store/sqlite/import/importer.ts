/**
 * Imports a NetAlertX or Pi.Alert database into netkeep's: devices, then events, then sessions.
 *
 * - The source is opened read-only and never written (source.ts).
 * - Times are the source's local times, converted to UTC (local-time.ts).
 * - Idempotent: a device is keyed by its MAC, an event by (MAC, time, type, IP), a session by
 *   (MAC, connection time), or (MAC, disconnection time) when it has no connection time; a row whose
 *   key is already in netkeep is counted as `present` and not written again.
 * - A device already in netkeep keeps every value it has: the import only fills its text fields
 *   that are still empty (devName '(unknown)' counts as empty) and moves devFirstConnection earlier.
 *   So an edit made in netkeep is never overwritten, and a device the scanner found before the
 *   import still gets its name, owner and type from the source.
 * - Bounded memory: rows are read one at a time and written in transactions of `batchSize` rows
 *   (the server, if it runs, waits at most one batch for its own writes: WAL + busy_timeout).
 * - Dry run: the target is opened read-only and what would be written goes to TEMP tables of the
 *   same connection (so duplicates inside the source are found as in a real run); nothing persists.
 *
 * Every row it does not take is reported with its table, rowid and reason (`onSkip`), and every
 * value it refused inside a device it did take (`onNote`).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import {
  maxTextLength,
  storedFields,
  withNameSource,
  type DbValue,
  type DeviceRow,
} from '../../../devices/catalogue.js';
import { newDeviceRow } from '../rows.js';
import { deviceSql } from '../device-sql.js';
import { sessionColumns } from '../../../devices/history.js';
import { openDatabase } from '../../../db/connection.js';
import { DomainError } from '../../../errors.js';
import { dbTime } from '../../../time.js';
import { normalizeMac } from '../../../validation.js';
import { BulkCounts, type HistoryTable } from './bulk-counts.js';
import { convertDevice, shown, type SourceValue } from '../../../import/device-values.js';
import { isTimeZone, LocalTimeReader, machineTimeZone } from '../../../import/local-time.js';
import { openSource, type Source, type SourceKind } from './source.js';

export type ImportTable = 'Devices' | 'Events' | 'Sessions';

export interface SkippedRow {
  readonly table: ImportTable;
  /** The row's rowid in the source. */
  readonly rowid: number;
  /** The MAC text as the source holds it. */
  readonly mac: string;
  readonly reason: string;
}

export interface ValueNote {
  readonly mac: string;
  readonly rowid: number;
  readonly note: string;
}

export interface TableCounts {
  /** Rows read from the source. */
  read: number;
  /** Rows written (or, in a dry run, that would be). */
  inserted: number;
  /** Devices only: existing devices whose empty fields were filled. */
  updated: number;
  /** Rows whose key netkeep already holds (nothing written). */
  present: number;
  skipped: number;
  /** Rows taken that are older than `historyDays` (the server's retention prunes them). */
  beyondRetention: number;
}

export interface ImportReport {
  readonly source: string;
  readonly kind: SourceKind;
  /** True when the source is in WAL mode and a copy of it was read (see source.ts). */
  readonly fromSnapshot: boolean;
  readonly timeZone: string;
  /** option: --timezone; source: its TIMEZONE setting; utc: it stores UTC; machine: this machine's. */
  readonly timeZoneFrom: 'option' | 'source' | 'utc' | 'machine';
  /** Why the source's times are taken as UTC (timeZoneFrom 'utc'). */
  readonly utcBecause: string | undefined;
  readonly dryRun: boolean;
  readonly devices: TableCounts;
  readonly events: TableCounts;
  readonly sessions: TableCounts;
  /** The first `keepSkipped` skipped rows (all of them go to `onSkip`). */
  readonly skipped: SkippedRow[];
  /** The first `keepSkipped` refused values (all of them go to `onNote`). */
  readonly notes: ValueNote[];
  /** Why the source's TIMEZONE setting was not used, when it was not. */
  readonly warnings: string[];
}

export interface ImportProgress {
  readonly table: ImportTable;
  readonly done: number;
  readonly total: number;
}

export interface ImportOptions {
  /** Path of the NetAlertX / Pi.Alert database. */
  readonly source: string;
  /** Path of netkeep's database ($DATA_DIR/netkeep.db); created (and migrated) unless a dry run. */
  readonly target: string;
  readonly dryRun?: boolean;
  /** IANA zone of the source's times; default its TIMEZONE setting, else this machine's zone. */
  readonly timeZone?: string;
  /** HISTORY_DAYS of the server: rows older than this are counted (it will prune them). */
  readonly historyDays?: number;
  /** Rows per write transaction. Default 10,000. */
  readonly batchSize?: number;
  readonly onSkip?: (row: SkippedRow) => void;
  readonly onNote?: (note: ValueNote) => void;
  /** Called every 100,000 rows and at least once a second while a table is read. */
  readonly onProgress?: (progress: ImportProgress) => void;
  /** Devices written (created or filled), to tell a running server's listeners. */
  readonly onDevice?: (mac: string, change: 'created' | 'updated') => void;
}

/** How many skipped rows and notes the report itself keeps (the callbacks get every one). */
const keepSkipped = 1000;
const progressEveryRows = 100_000;
/** Page cache of the import's target connection. */
const importCacheKiB = 64 * 1024;
const progressEveryMs = 1000;

const emptyCounts = (): TableCounts => ({
  read: 0,
  inserted: 0,
  updated: 0,
  present: 0,
  skipped: 0,
  beyondRetention: 0,
});

/** Text fields an existing device may take from the source when its own value is one of these. */
const unsetText = new Set(['', '(unknown)', '(name not found)']);
const fillableFields = storedFields.filter((f) => f.kind === 'text' && f.editable).map((f) => f.name);

interface EventRow {
  mac: string;
  ip: string;
  time: string;
  type: string;
  info: string;
}

interface SessionRow {
  mac: string;
  ip: string;
  connType: string;
  conn: string | null;
  discType: string;
  disc: string | null;
  still: number;
  info: string;
}

/** Where rows go: netkeep's tables, or (dry run) TEMP tables that vanish with the connection. */
const stagingDdl = `
  CREATE TEMP TABLE import_devices (mac TEXT PRIMARY KEY);
  CREATE TEMP TABLE import_events (mac TEXT, time TEXT, type TEXT, ip TEXT);
  CREATE INDEX temp.import_events_key ON import_events (mac, time, type, ip);
  CREATE TEMP TABLE import_sessions (mac TEXT, conn TEXT, disc TEXT);
  CREATE INDEX temp.import_sessions_key ON import_sessions (mac, conn, disc);
`;

/** The key of a session: its connection time, or its disconnection time when it has none. */
const sessionKey = (column: { mac: string; conn: string; disc: string }) =>
  `${column.mac} = @mac AND ${column.conn} IS @conn AND (@conn IS NOT NULL OR ${column.disc} IS @disc)`;

const sql = {
  eventExists: `SELECT EXISTS (SELECT 1 FROM main.Events WHERE eve_MAC = @mac AND eve_DateTime = @time
      AND eve_EventType = @type AND eve_IP = @ip)
    OR EXISTS (SELECT 1 FROM temp.import_events WHERE mac = @mac AND time = @time AND type = @type AND ip = @ip)`,
  insertEvent: `INSERT INTO main.Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo,
      eve_PendingAlertEmail, eve_PairEventRowid) VALUES (@mac, @ip, @time, @type, @info, 0, NULL)`,
  stageEvent: 'INSERT INTO temp.import_events (mac, time, type, ip) VALUES (@mac, @time, @type, @ip)',
  sessionExists: `SELECT EXISTS (SELECT 1 FROM main.Sessions WHERE ${sessionKey({
    mac: 'ses_MAC',
    conn: 'ses_DateTimeConnection',
    disc: 'ses_DateTimeDisconnection',
  })}) OR EXISTS (SELECT 1 FROM temp.import_sessions WHERE ${sessionKey({ mac: 'mac', conn: 'conn', disc: 'disc' })})`,
  insertSession: `INSERT INTO main.Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
      ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected, ses_AdditionalInfo)
    VALUES (@mac, @ip, @connType, @conn, @discType, @disc, @still, @info)`,
  stageSession: 'INSERT INTO temp.import_sessions (mac, conn, disc) VALUES (@mac, @conn, @disc)',
  deviceExists: `SELECT EXISTS (SELECT 1 FROM main.Devices WHERE devMac = ?)
    OR EXISTS (SELECT 1 FROM temp.import_devices WHERE mac = ?)`,
  stageDevice: 'INSERT INTO temp.import_devices (mac) VALUES (?)',
};

function sourceText(value: SourceValue | undefined): string {
  return value === null || value === undefined || Buffer.isBuffer(value) ? '' : String(value);
}

/**
 * The first of `columns` whose text is longer than the catalogue's bound on every stored text
 * (maxTextLength), as the reason its row is skipped; undefined when all fit. History rows are
 * skipped whole rather than cut: a cut IP or event type would be a value the source never held.
 */
function overLong(
  row: Readonly<Record<string, SourceValue>>,
  columns: readonly string[],
): string | undefined {
  for (const column of columns) {
    const length = sourceText(row[column]).length;
    if (length > maxTextLength)
      return `${column} is ${length} characters long, over the ${maxTextLength} a text column holds`;
  }
  return undefined;
}

function resolveZone(options: ImportOptions, source: Source, warnings: string[]) {
  if (options.timeZone !== undefined) {
    if (!isTimeZone(options.timeZone))
      throw new DomainError(
        'invalid',
        `--timezone '${options.timeZone}' is not an IANA time zone (e.g. Europe/Berlin).`,
        {
          code: 'IMPORT_BAD_TIMEZONE',
        },
      );
    return { zone: options.timeZone, from: 'option' as const };
  }
  if (source.utcBecause !== undefined) return { zone: 'UTC', from: 'utc' as const };
  if (source.timeZoneSetting !== undefined) {
    if (isTimeZone(source.timeZoneSetting)) return { zone: source.timeZoneSetting, from: 'source' as const };
    warnings.push(
      `the source's TIMEZONE setting '${source.timeZoneSetting}' is not an IANA zone; using this machine's`,
    );
  }
  return { zone: machineTimeZone(), from: 'machine' as const };
}

/** Opens the target: migrated read-write, or (dry run) read-only, or an empty stand-in if missing. */
function openTarget(path: string, dryRun: boolean): { db: Database.Database; cleanup: () => void } {
  if (!dryRun) {
    const db = openDatabase(path);
    // A bigger page cache than the server's for this one bulk job (bounded: part of the RSS budget).
    db.pragma(`cache_size = -${importCacheKiB}`);
    return { db, cleanup: () => db.close() };
  }
  if (existsSync(path)) {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    return { db, cleanup: () => db.close() };
  }
  // Nothing to compare with: an empty netkeep database in a temporary directory stands in.
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-import-dry-'));
  const db = openDatabase(join(dir, 'netkeep.db'));
  return {
    db,
    cleanup: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function importDatabase(options: ImportOptions): ImportReport {
  const dryRun = options.dryRun ?? false;
  const batchSize = options.batchSize ?? 10_000;
  // A WAL-mode source is copied first: beside the target (it will hold as much), else in tmpdir().
  const targetDir = dirname(options.target);
  const source = openSource(options.source, existsSync(targetDir) ? { snapshotParent: targetDir } : {});
  const warnings: string[] = [];
  let target: { db: Database.Database; cleanup: () => void } | undefined;
  try {
    const { zone, from } = resolveZone(options, source, warnings);
    target = openTarget(options.target, dryRun);
    const report: ImportReport = {
      source: options.source,
      kind: source.kind,
      fromSnapshot: source.fromSnapshot,
      timeZone: zone,
      timeZoneFrom: from,
      utcBecause: from === 'utc' ? source.utcBecause : undefined,
      dryRun,
      devices: emptyCounts(),
      events: emptyCounts(),
      sessions: emptyCounts(),
      skipped: [],
      notes: [],
      warnings,
    };
    new Importer(source, target.db, new LocalTimeReader(zone), options, report, dryRun, batchSize).run();
    return report;
  } finally {
    target?.cleanup();
    source.close();
  }
}

class Importer {
  private readonly deviceExists: Database.Statement<[string, string], number>;
  /** MACs an event or session may name: the source's devices (taken or present) and netkeep's. */
  private readonly knownMacs = new Map<string, boolean>();
  private readonly macForms = new Map<string, string | null>();
  /** Storage time before which the server's retention prunes history ('' when not given). */
  private readonly retentionStart: string;
  /** Counts each batch of history at once (a dry run writes to staging tables, never counted). */
  private readonly bulkCounts: BulkCounts | undefined;

  constructor(
    private readonly source: Source,
    private readonly db: Database.Database,
    private readonly reader: LocalTimeReader,
    private readonly options: ImportOptions,
    private readonly report: ImportReport,
    private readonly dryRun: boolean,
    private readonly batchSize: number,
  ) {
    db.exec(stagingDdl);
    this.retentionStart =
      options.historyDays === undefined
        ? ''
        : dbTime(new Date(Date.now() - options.historyDays * 86_400_000));
    this.deviceExists = db.prepare<[string, string], number>(sql.deviceExists).pluck();
    this.bulkCounts = dryRun ? undefined : new BulkCounts(db);
  }

  run(): void {
    this.importDevices();
    if (this.source.hasEvents) this.importEvents();
    if (this.source.hasSessions) this.importSessions();
    const { events, sessions } = this.report;
    if (events.beyondRetention + sessions.beyondRetention > 0)
      this.report.warnings.push(
        `${events.beyondRetention} events and ${sessions.beyondRetention} sessions are older than HISTORY_DAYS (${this.options.historyDays} days): the server prunes them when it starts and daily; raise HISTORY_DAYS before starting it to keep them`,
      );
  }

  private skip(table: ImportTable, rowid: number, mac: string, reason: string): void {
    const counts = this.counts(table);
    counts.skipped++;
    const row: SkippedRow = { table, rowid, mac: shown(mac), reason };
    if (this.report.skipped.length < keepSkipped) this.report.skipped.push(row);
    this.options.onSkip?.(row);
  }

  private counts(table: ImportTable): TableCounts {
    return table === 'Devices'
      ? this.report.devices
      : table === 'Events'
        ? this.report.events
        : this.report.sessions;
  }

  /** normalizeMac, remembered per source text (a source repeats each device's MAC text). */
  private canonicalMac(text: string): string | null {
    let mac = this.macForms.get(text);
    if (mac === undefined) {
      mac = normalizeMac(text.trim());
      if (this.macForms.size >= 100_000) this.macForms.clear();
      this.macForms.set(text, mac);
    }
    return mac;
  }

  /** The canonical MAC of a history row, or why the row is skipped. */
  private historyMac(value: SourceValue | undefined): { mac: string } | { skip: string; mac: string } {
    const text = sourceText(value);
    const mac = this.canonicalMac(text);
    if (mac === null) return { skip: `'${shown(text)}' is not a MAC address`, mac: text };
    if (!this.isKnownMac(mac)) return { skip: 'no device with this MAC in the source or in netkeep', mac };
    return { mac };
  }

  /**
   * Inserts the rows of a batch that are not there yet (counts the others as present), counted in
   * bulk (see bulk-counts.ts). A batch with nothing new (a second run) changes nothing, not even
   * the schema.
   */
  private writeNew<T>(
    table: HistoryTable,
    rows: readonly T[],
    exists: Database.Statement<[T], number>,
    write: Database.Statement<[T]>,
    counts: TableCounts,
    isOld: (row: T) => boolean,
  ): void {
    const firstNew = rows.findIndex((row) => exists.get(row) !== 1);
    counts.present += firstNew === -1 ? rows.length : firstNew;
    if (firstNew === -1) return;
    const insert = (): void => {
      // From the first new row on, checked row by row: a row may repeat inside the batch.
      for (const row of rows.slice(firstNew)) {
        if (exists.get(row) === 1) {
          counts.present++;
          continue;
        }
        write.run(row);
        counts.inserted++;
        if (isOld(row)) counts.beyondRetention++;
      }
    };
    if (this.bulkCounts === undefined) insert();
    else this.bulkCounts.insertCounted(table, insert);
  }

  private isKnownMac(mac: string): boolean {
    let known = this.knownMacs.get(mac);
    if (known === undefined) {
      known = this.deviceExists.get(mac, mac) === 1;
      this.knownMacs.set(mac, known);
    }
    return known;
  }

  /**
   * Reads `table` row by row, converting each with `convert` (a row to write, or a reason to skip),
   * and hands batches of rows to `write` inside one transaction each.
   */
  private stream<T>(
    table: ImportTable,
    query: string,
    convert: (row: Record<string, SourceValue>) => T | { skip: string; mac: string },
    write: (rows: T[]) => void,
  ): void {
    const counts = this.counts(table);
    let total: number;
    try {
      total = this.source.db.prepare<[], number>(`SELECT COUNT(*) FROM ${table}`).pluck().get() ?? 0;
    } catch (err) {
      throw this.failure(table, 'reading', err);
    }
    // Each batch takes the write lock at BEGIN (IMMEDIATE), where busy_timeout lets it wait for a
    // running server's commit; a read transaction upgraded later would fail at once instead.
    const writeBatch = this.db.transaction(write);
    let batch: T[] = [];
    let lastProgress = Date.now();
    let reported = -1;
    const report = () => {
      reported = counts.read;
      lastProgress = Date.now();
      this.options.onProgress?.({ table, done: counts.read, total });
    };
    const writeRows = (rows: T[]): void => {
      try {
        writeBatch.immediate(rows);
      } catch (err) {
        throw this.failure(table, 'writing', err);
      }
    };
    let rows: Iterator<Record<string, SourceValue>>;
    try {
      rows = this.source.db.prepare<[], Record<string, SourceValue>>(query).iterate();
    } catch (err) {
      throw this.failure(table, 'reading', err);
    }
    try {
      for (;;) {
        let next: IteratorResult<Record<string, SourceValue>>;
        try {
          next = rows.next();
        } catch (err) {
          throw this.failure(table, 'reading', err);
        }
        if (next.done === true) break;
        const row = next.value;
        counts.read++;
        const converted = convert(row);
        if (typeof converted === 'object' && converted !== null && 'skip' in converted) {
          this.skip(table, Number(row.rid), converted.mac, converted.skip);
        } else {
          batch.push(converted);
          if (batch.length >= this.batchSize) {
            writeRows(batch);
            batch = [];
          }
        }
        if (counts.read % progressEveryRows === 0 || Date.now() - lastProgress >= progressEveryMs) report();
      }
    } finally {
      rows.return?.(); // a failure mid-table leaves no statement running on the source
    }
    if (batch.length > 0) writeRows(batch);
    if (reported !== counts.read) report(); // the last line says the table is done, once
  }

  /**
   * What a SQLite error met in the middle of a table becomes: a sentence that says where it
   * stopped and what is kept (every batch before it is committed; the import is idempotent, so a
   * second run adds the rest), never the raw SqliteError.
   */
  private failure(table: ImportTable, doing: 'reading' | 'writing', err: unknown): DomainError {
    if (err instanceof DomainError) return err;
    const counts = this.counts(table);
    const where =
      doing === 'reading'
        ? `the source (${this.options.source})`
        : `netkeep's database (${this.options.target})`;
    return new DomainError(
      doing === 'reading' ? 'invalid' : 'unavailable',
      `${doing} ${table} of ${where} failed after ${counts.read} rows: ${(err as Error).message}. ` +
        `Rows written before that are kept; once the cause is fixed, run the import again (it adds only what is missing).`,
      { code: doing === 'reading' ? 'IMPORT_SOURCE_UNREADABLE' : 'IMPORT_TARGET_FAILED', cause: err },
    );
  }

  private importDevices(): void {
    const columns = this.source.deviceColumns;
    const query = `SELECT rowid AS rid, ${[...columns.keys()].map((c) => `"${c}"`).join(', ')} FROM Devices ORDER BY rowid`;
    const select = this.db.prepare<[string], DeviceRow>(deviceSql.select);
    const insert = this.db.prepare(deviceSql.insert);
    const stage = this.db.prepare(sql.stageDevice);
    const counts = this.report.devices;
    const macColumn = [...columns].find(([, field]) => field === 'devMac')?.[0] ?? '';
    const seen = new Map<string, number>();
    const now = dbTime(new Date());

    type Taken = { rid: number; mac: string; columns: Record<string, DbValue> };
    this.stream<Taken>(
      'Devices',
      query,
      (row) => {
        const converted = convertDevice(row, columns, this.reader);
        const rid = Number(row.rid);
        if (!converted.ok) return { skip: converted.reason, mac: sourceText(row[macColumn] ?? null) };
        const first = seen.get(converted.mac);
        if (first !== undefined)
          return {
            skip: `same MAC as Devices row ${first} (${converted.mac}); the first one is taken`,
            mac: converted.mac,
          };
        seen.set(converted.mac, rid);
        for (const note of converted.notes) {
          const entry: ValueNote = { mac: converted.mac, rowid: rid, note };
          if (this.report.notes.length < keepSkipped) this.report.notes.push(entry);
          this.options.onNote?.(entry);
        }
        return { rid, mac: converted.mac, columns: converted.columns };
      },
      (rows) => {
        for (const { mac, columns: values } of rows) {
          this.knownMacs.set(mac, true);
          const existing = select.get(mac);
          if (existing === undefined && this.deviceExists.get(mac, mac) !== 1) {
            counts.inserted++;
            if (this.dryRun) {
              stage.run(mac);
              continue;
            }
            const guid = values.devGUID;
            // A name the source gives is an import name: automatic naming never replaces it.
            const row = newDeviceRow(
              mac,
              withNameSource({ devFirstConnection: now, devLastConnection: now, ...values }, 'import'),
            );
            if (typeof guid === 'string') row.devGUID = guid;
            insert.run(row);
            this.options.onDevice?.(mac, 'created');
            continue;
          }
          const fill = existing === undefined ? {} : this.fillFor(existing, values);
          if (Object.keys(fill).length === 0) {
            counts.present++;
            continue;
          }
          counts.updated++;
          if (this.dryRun) continue;
          const assignments = Object.keys(fill).map((name) => `${name} = @${name}`);
          // Column names are the catalogue's (fillFor only returns those); values are parameters.
          this.db
            .prepare(`UPDATE Devices SET ${assignments.join(', ')} WHERE devMac = @mac`)
            .run({ ...fill, mac });
          this.options.onDevice?.(mac, 'updated');
        }
      },
    );
  }

  /** The values an existing device takes from the source (see the file comment). */
  private fillFor(existing: DeviceRow, values: Readonly<Record<string, DbValue>>): Record<string, DbValue> {
    const fill: Record<string, DbValue> = {};
    for (const name of fillableFields) {
      const mine = existing[name];
      const theirs = values[name];
      if (
        typeof theirs === 'string' &&
        !unsetText.has(theirs) &&
        typeof mine === 'string' &&
        unsetText.has(mine)
      )
        fill[name] = theirs;
    }
    if (fill.devName !== undefined) fill.devNameSource = 'import';
    const first = values.devFirstConnection;
    const myFirst = existing.devFirstConnection;
    if (typeof first === 'string' && (typeof myFirst !== 'string' || first < myFirst))
      fill.devFirstConnection = first;
    return fill;
  }

  private importEvents(): void {
    const columns = ['eve_MAC', 'eve_IP', 'eve_DateTime', 'eve_EventType', 'eve_AdditionalInfo'];
    const { list, mac: macColumn } = this.source.historySelect('Events', columns);
    if (macColumn === undefined) {
      this.report.warnings.push('Events has no MAC column (eve_MAC or eveMac): no event was imported');
      return;
    }
    // In MAC order (the source's own eve_MAC index): each device's rows then go into netkeep's
    // (MAC, time) index one after another instead of at random places, which keeps the import's
    // index pages in the cache (3x faster at a million events).
    const query = `SELECT rowid AS rid, ${list} FROM Events ORDER BY ${macColumn}, rowid`;
    const exists = this.db.prepare<[EventRow], number>(sql.eventExists).pluck();
    const write = this.db.prepare<[EventRow]>(this.dryRun ? sql.stageEvent : sql.insertEvent);
    const counts = this.report.events;
    this.stream<EventRow>(
      'Events',
      query,
      (row) => {
        const checked = this.historyMac(row.eve_MAC);
        if ('skip' in checked) return checked;
        const { mac } = checked;
        const tooLong = overLong(row, ['eve_IP', 'eve_EventType', 'eve_AdditionalInfo']);
        if (tooLong !== undefined) return { skip: tooLong, mac };
        const timeText = sourceText(row.eve_DateTime);
        const time = this.reader.toUtc(timeText);
        if (time === null) return { skip: `eve_DateTime '${shown(timeText)}' is not a date-time`, mac };
        const type = sourceText(row.eve_EventType).trim();
        if (type === '') return { skip: 'no eve_EventType', mac };
        return { mac, ip: sourceText(row.eve_IP), time, type, info: sourceText(row.eve_AdditionalInfo) };
      },
      (rows) => {
        this.writeNew('Events', rows, exists, write, counts, (row) => row.time < this.retentionStart);
      },
    );
  }

  private importSessions(): void {
    const { list, mac: macColumn } = this.source.historySelect('Sessions', sessionColumns);
    if (macColumn === undefined) {
      this.report.warnings.push('Sessions has no MAC column (ses_MAC or sesMac): no session was imported');
      return;
    }
    const query = `SELECT rowid AS rid, ${list} FROM Sessions ORDER BY ${macColumn}, rowid`;
    const exists = this.db.prepare<[SessionRow], number>(sql.sessionExists).pluck();
    const write = this.db.prepare<[SessionRow]>(this.dryRun ? sql.stageSession : sql.insertSession);
    const counts = this.report.sessions;
    /** A session time: null when not recorded, undefined when unreadable. */
    const readTime = (value: SourceValue | undefined): string | null | undefined => {
      const text = sourceText(value).trim();
      if (text === '' || text.startsWith('<')) return null; // NetAlertX writes '<missing event>'
      return this.reader.toUtc(text) ?? undefined;
    };
    this.stream<SessionRow>(
      'Sessions',
      query,
      (row) => {
        const checked = this.historyMac(row.ses_MAC);
        if ('skip' in checked) return checked;
        const { mac } = checked;
        const tooLong = overLong(row, [
          'ses_IP',
          'ses_EventTypeConnection',
          'ses_EventTypeDisconnection',
          'ses_AdditionalInfo',
        ]);
        if (tooLong !== undefined) return { skip: tooLong, mac };
        const conn = readTime(row.ses_DateTimeConnection);
        if (conn === undefined)
          return {
            skip: `ses_DateTimeConnection '${shown(sourceText(row.ses_DateTimeConnection))}' is not a date-time`,
            mac,
          };
        const disc = readTime(row.ses_DateTimeDisconnection);
        if (disc === undefined)
          return {
            skip: `ses_DateTimeDisconnection '${shown(sourceText(row.ses_DateTimeDisconnection))}' is not a date-time`,
            mac,
          };
        if (conn === null && disc === null)
          return { skip: 'neither a connection nor a disconnection time', mac };
        const stillText = sourceText(row.ses_StillConnected).trim().toLowerCase();
        const still = disc === null && (stillText === '1' || stillText === 'true') ? 1 : 0;
        return {
          mac,
          ip: sourceText(row.ses_IP),
          connType: sourceText(row.ses_EventTypeConnection),
          conn,
          discType: sourceText(row.ses_EventTypeDisconnection),
          disc,
          still,
          info: sourceText(row.ses_AdditionalInfo),
        };
      },
      (rows) => {
        this.writeNew(
          'Sessions',
          rows,
          exists,
          write,
          counts,
          (row) => row.disc !== null && row.disc < this.retentionStart,
        );
      },
    );
  }
}
