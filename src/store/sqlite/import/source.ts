/**
 * The database being imported: a NetAlertX `app.db` or a Pi.Alert `pialert.db`, opened read-only
 * (never written, never created). The two are told apart by their Devices columns (`devMac` or
 * `dev_MAC`); the mapping of each source column to a catalogue field is written out here, by
 * meaning, once. Only columns that exist in the file are read, so a database from any version
 * works: what it lacks takes the catalogue's defaults.
 *
 * A database in WAL mode (NetAlertX opens its app.db with journal_mode=WAL) cannot be read in place
 * without side effects: SQLite creates `app.db-shm` and `app.db-wal` beside it and leaves them there,
 * and where it may not create them (a read-only mount, a directory of another user) it cannot open
 * the file at all. Such a source is therefore copied first, with its `-wal` file when it has one
 * (the rows NetAlertX has not yet checkpointed into app.db), into a private directory, and the copy
 * is read; nothing is created beside the source. A copy taken while the source changed is taken
 * again, and refused after a few tries (NetAlertX still running).
 *
 * Only regular files are read: a FIFO (or a device, a socket) given as the source or lying beside
 * it as its `-wal` or `-journal` would block the import for ever (SQLite and the copy read until
 * its writer closes it), so it is refused before anything is opened for reading or copied. The
 * tables the import reads must be tables with a rowid (it names every row it skips by rowid): a
 * view or a WITHOUT ROWID table is refused up front, before anything is written.
 */
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
  type Stats,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DomainError } from '../../../errors.js';
import { fieldsByName } from '../../../devices/catalogue.js';

export type SourceKind = 'netalertx' | 'pialert';

/**
 * Pi.Alert's `dev_*` columns (and those of NetAlertX releases before it renamed them) by the
 * catalogue field that holds the same meaning.
 */
const piAlertColumns: Readonly<Record<string, string>> = {
  dev_MAC: 'devMac',
  dev_Name: 'devName',
  dev_Owner: 'devOwner',
  dev_DeviceType: 'devType',
  dev_Vendor: 'devVendor',
  dev_Favorite: 'devFavorite',
  dev_Group: 'devGroup',
  dev_Comments: 'devComments',
  dev_FirstConnection: 'devFirstConnection',
  dev_LastConnection: 'devLastConnection',
  dev_LastIP: 'devLastIP',
  dev_StaticIP: 'devStaticIP',
  dev_ScanCycle: 'devScan',
  dev_LogEvents: 'devLogEvents',
  dev_AlertEvents: 'devAlertEvents',
  dev_AlertDeviceDown: 'devAlertDown',
  dev_SkipRepeated: 'devSkipRepeated',
  dev_LastNotification: 'devLastNotification',
  dev_PresentLastScan: 'devPresentLastScan',
  dev_NewDevice: 'devIsNew',
  dev_Location: 'devLocation',
  dev_Archived: 'devIsArchived',
  dev_Network_Node_MAC_ADDR: 'devParentMAC',
  dev_Network_Node_port: 'devParentPort',
  dev_Icon: 'devIcon',
  dev_GUID: 'devGUID',
  dev_NetworkSite: 'devSite',
  dev_SSID: 'devSSID',
  dev_SyncHubNodeName: 'devSyncHubNode',
  dev_SourcePlugin: 'devSourcePlugin',
  dev_CustomProps: 'devCustomProps',
};

/**
 * NetAlertX releases of 2026 renamed the Events and Sessions columns to camelCase (its db_upgrade's
 * migrate_to_camelcase: `eve_MAC` → `eveMac`, ...). The importer reads them by their older names;
 * here is the newer name of each.
 */
const camelCaseHistoryColumns: Readonly<Record<string, string>> = {
  eve_MAC: 'eveMac',
  eve_IP: 'eveIp',
  eve_DateTime: 'eveDateTime',
  eve_EventType: 'eveEventType',
  eve_AdditionalInfo: 'eveAdditionalInfo',
  eve_PendingAlertEmail: 'evePendingAlertEmail',
  eve_PairEventRowid: 'evePairEventRowid',
  ses_MAC: 'sesMac',
  ses_IP: 'sesIp',
  ses_EventTypeConnection: 'sesEventTypeConnection',
  ses_DateTimeConnection: 'sesDateTimeConnection',
  ses_EventTypeDisconnection: 'sesEventTypeDisconnection',
  ses_DateTimeDisconnection: 'sesDateTimeDisconnection',
  ses_StillConnected: 'sesStillConnected',
  ses_AdditionalInfo: 'sesAdditionalInfo',
};

/** Source column name → catalogue field name, for the columns this file has. */
export type ColumnMap = ReadonlyMap<string, string>;

export interface Source {
  readonly kind: SourceKind;
  readonly db: Database.Database;
  readonly deviceColumns: ColumnMap;
  readonly hasEvents: boolean;
  readonly hasSessions: boolean;
  /** The TIMEZONE setting NetAlertX keeps in its Settings table, when it has one. */
  readonly timeZoneSetting: string | undefined;
  /**
   * Why the source's times are UTC already, when they are: NetAlertX after 26.2.6 stores UTC and
   * converts an older database when it upgrades it (setting DB_TIMESTAMPS_UTC_MIGRATED), after
   * renaming its history columns to camelCase. Undefined: local times (NetAlertX before, Pi.Alert).
   */
  readonly utcBecause: string | undefined;
  /**
   * The select list of a history table (Events, Sessions) for the given older column names, each
   * read from the column the file has (older or camelCase name) or NULL; and that table's MAC column.
   */
  historySelect(
    table: 'Events' | 'Sessions',
    columns: readonly string[],
  ): { list: string; mac: string | undefined };
  /** True when a copy was read (the source is in WAL mode), not the file itself. */
  readonly fromSnapshot: boolean;
  close(): void;
}

export interface OpenSourceOptions {
  /** Where the copy of a WAL-mode source is made (it needs the source's size); default tmpdir(). */
  readonly snapshotParent?: string;
}

/** Copies of a changing source taken before giving up. */
const snapshotTries = 3;

/** What a file that is not a regular file is, for a message. */
function fileKind(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

function notRegular(path: string, stats: Stats): DomainError {
  return new DomainError(
    'invalid',
    `${path} is ${fileKind(stats)}, not a regular file: give the path of the database file itself (a FIFO or a device would never end).`,
    { code: 'IMPORT_SOURCE_NOT_A_FILE' },
  );
}

/**
 * The first 100 bytes of the file (SQLite's header), or why they cannot be read. Opened without
 * blocking and checked through its descriptor: a FIFO is refused, never waited on.
 */
function readHeader(path: string): Buffer {
  const header = Buffer.alloc(100);
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new DomainError('invalid', `${path} cannot be opened: ${(err as Error).message}`, {
      code: 'IMPORT_SOURCE_UNREADABLE',
      cause: err,
    });
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw notRegular(path, stats);
    readSync(fd, header, 0, header.length, 0);
  } catch (err) {
    if (err instanceof DomainError) throw err;
    throw new DomainError('invalid', `${path} cannot be read: ${(err as Error).message}`, {
      code: 'IMPORT_SOURCE_UNREADABLE',
      cause: err,
    });
  } finally {
    closeSync(fd);
  }
  return header;
}

/** SQLite's files beside a database, which it (or the copy) would read. */
const sidecars = ['-wal', '-journal'];

/** Refuses a `-wal` or `-journal` beside `path` that exists and is not a regular file. */
function checkSidecars(path: string): void {
  for (const suffix of sidecars) {
    let stats: Stats;
    try {
      stats = statSync(`${path}${suffix}`);
    } catch {
      continue; // not there
    }
    if (!stats.isFile()) throw notRegular(`${path}${suffix}`, stats);
  }
}

/** Bytes 18 and 19 of the header (write and read version) are 2 in WAL mode, 1 otherwise. */
function isWalMode(header: Buffer): boolean {
  return (
    header.subarray(0, 16).toString('latin1') === 'SQLite format 3\0' &&
    (header[18] === 2 || header[19] === 2)
  );
}

/** Size and modification time of a file, '' when it does not exist. */
function fileState(path: string): string {
  try {
    const s = statSync(path);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return '';
  }
}

/** Name of a copy's directory: the prefix, the importing process's pid, a random part. */
const snapshotPrefix = 'netkeep-import-source-';

/**
 * Removes the copies an import killed on its way left in `parent` (its process is gone). An import
 * removes its own copy on every failure it sees; kill -9 or a power cut it cannot see.
 */
function removeStaleSnapshots(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(snapshotPrefix)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(snapshotPrefix.length))?.[1]);
    if (!Number.isSafeInteger(pid) || pid === process.pid || processAlive(pid)) continue;
    rmSync(join(parent, name), { recursive: true, force: true });
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists (another user's); only ESRCH says it is gone.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Copies `path` and its `-wal` (when present) into a new private directory under `parent`, as
 * `source.db` and `source.db-wal`; returns the directory. Retakes the copy while the files change.
 */
function snapshot(path: string, parent: string): string {
  const wal = `${path}-wal`;
  removeStaleSnapshots(parent);
  for (let attempt = 1; ; attempt++) {
    const before = `${fileState(path)}|${fileState(wal)}`;
    const dir = mkdtempSync(join(parent, `${snapshotPrefix}${process.pid}-`));
    try {
      copyFileSync(path, join(dir, 'source.db'));
      if (existsSync(wal)) copyFileSync(wal, join(dir, 'source.db-wal'));
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw new DomainError(
        'invalid',
        `${path} is in WAL mode and is read from a copy, which could not be made in ${parent}: ${(err as Error).message}`,
        { code: 'IMPORT_SOURCE_UNREADABLE', cause: err },
      );
    }
    if (`${fileState(path)}|${fileState(wal)}` === before) return dir;
    rmSync(dir, { recursive: true, force: true });
    if (attempt >= snapshotTries)
      throw new DomainError(
        'invalid',
        `${path} changed while it was being copied (${snapshotTries} times): stop NetAlertX first, or import a copy made with sqlite3 ${path} ".backup /tmp/app.db".`,
        { code: 'IMPORT_SOURCE_CHANGING' },
      );
  }
}

function columnsOf(db: Database.Database, table: string): string[] {
  return db.prepare<[string], string>('SELECT name FROM pragma_table_info(?)').pluck().all(table);
}

function tableExists(db: Database.Database, table: string): boolean {
  return (
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(table) !==
    undefined
  );
}

/**
 * Refuses a table the import cannot read row by row: a view, a WITHOUT ROWID table, anything whose
 * rowid SQLite will not give. Checked for every table before anything is written, so that such a
 * source never half-imports.
 */
function checkRowidTable(db: Database.Database, path: string, table: string): void {
  const listed = db
    .prepare<[string], { type: string; wr: number }>(
      "SELECT type, wr FROM pragma_table_list WHERE schema = 'main' AND name = ?",
    )
    .get(table);
  const what =
    listed?.type === 'view' ? 'is a view' : listed?.wr === 1 ? 'is a WITHOUT ROWID table' : undefined;
  let reason = what;
  if (reason === undefined) {
    try {
      db.prepare(`SELECT rowid FROM "${table}" LIMIT 0`);
    } catch (err) {
      reason = `cannot be read by rowid (${(err as Error).message})`;
    }
  }
  if (reason !== undefined)
    throw new DomainError(
      'invalid',
      `${path}: its ${table} ${reason}; the import reads every table by rowid (to name each row it skips), so it cannot import this file. Nothing was imported.`,
      { code: 'IMPORT_SOURCE_UNSUPPORTED' },
    );
}

/**
 * Opens `path` read-only (a WAL-mode database: a copy of it) and works out what it is; an `invalid`
 * DomainError when it is neither.
 */
export function openSource(path: string, options: OpenSourceOptions = {}): Source {
  const header = readHeader(path);
  checkSidecars(path);
  const snapshotDir = isWalMode(header) ? snapshot(path, options.snapshotParent ?? tmpdir()) : undefined;
  const removeSnapshot = () => {
    if (snapshotDir !== undefined) rmSync(snapshotDir, { recursive: true, force: true });
  };
  let db: Database.Database;
  try {
    db = new Database(snapshotDir === undefined ? path : join(snapshotDir, 'source.db'), {
      readonly: true,
      fileMustExist: true,
    });
    db.pragma('query_only = ON');
    db.prepare('SELECT count(*) FROM sqlite_master').get(); // fails here when it is not SQLite
  } catch (err) {
    removeSnapshot();
    throw new DomainError(
      'invalid',
      `${path} cannot be opened as a SQLite database: ${(err as Error).message}`,
      {
        code: 'IMPORT_SOURCE_UNREADABLE',
        cause: err,
      },
    );
  }
  try {
    return {
      ...describe(db, path),
      db,
      fromSnapshot: snapshotDir !== undefined,
      close: () => {
        db.close();
        removeSnapshot();
      },
    };
  } catch (err) {
    db.close();
    removeSnapshot();
    throw err;
  }
}

/** What the open database is: its kind, the device columns it has, its tables and time zone. */
function describe(db: Database.Database, path: string): Omit<Source, 'db' | 'fromSnapshot' | 'close'> {
  const devices = columnsOf(db, 'Devices');
  let kind: SourceKind;
  const deviceColumns = new Map<string, string>();
  if (devices.includes('devMac')) {
    kind = 'netalertx';
    for (const column of devices) if (fieldsByName.has(column)) deviceColumns.set(column, column);
  } else if (devices.includes('dev_MAC')) {
    kind = 'pialert';
    for (const column of devices) {
      const field = piAlertColumns[column];
      if (field !== undefined && fieldsByName.has(field)) deviceColumns.set(column, field);
    }
  } else {
    throw new DomainError(
      'invalid',
      `${path} is not a NetAlertX or Pi.Alert database: its Devices table has neither devMac nor dev_MAC.`,
      { code: 'IMPORT_SOURCE_UNKNOWN' },
    );
  }
  const settings = tableExists(db, 'Settings') && columnsOf(db, 'Settings').includes('setKey');
  const setting = (key: string): string | undefined => {
    if (!settings) return undefined;
    const value = db.prepare<[string]>('SELECT setValue FROM Settings WHERE setKey = ?').pluck().get(key);
    const text = typeof value === 'string' || typeof value === 'number' ? String(value).trim() : '';
    return text === '' ? undefined : text.replace(/^['"]|['"]$/g, '');
  };
  const history = new Map<string, Set<string>>();
  for (const table of ['Events', 'Sessions'])
    if (tableExists(db, table)) history.set(table, new Set(columnsOf(db, table)));
  for (const table of ['Devices', ...history.keys()]) checkRowidTable(db, path, table);
  const historySelect = (table: 'Events' | 'Sessions', columns: readonly string[]) => {
    const have = history.get(table) ?? new Set<string>();
    const actual = (name: string): string | undefined => {
      if (have.has(name)) return name;
      const camel = camelCaseHistoryColumns[name];
      return camel !== undefined && have.has(camel) ? camel : undefined;
    };
    const list = columns
      .map((name) => {
        const column = actual(name);
        return column === undefined ? `NULL AS "${name}"` : `"${column}" AS "${name}"`;
      })
      .join(', ');
    const mac = actual(table === 'Events' ? 'eve_MAC' : 'ses_MAC');
    return { list, mac: mac === undefined ? undefined : `"${mac}"` };
  };
  return {
    kind,
    deviceColumns,
    hasEvents: history.has('Events'),
    hasSessions: history.has('Sessions'),
    timeZoneSetting: setting('TIMEZONE'),
    utcBecause: utcBecause(setting, history.get('Events')),
    historySelect,
  };
}

/** Why a NetAlertX database's times are UTC (see Source.utcBecause), or undefined. */
function utcBecause(
  setting: (key: string) => string | undefined,
  eventColumns: ReadonlySet<string> | undefined,
): string | undefined {
  if (setting('DB_TIMESTAMPS_UTC_MIGRATED') === '1')
    return 'its setting DB_TIMESTAMPS_UTC_MIGRATED says NetAlertX converted them';
  const version = /^v?(\d+)\.(\d+)\.(\d+)/.exec(setting('VERSION') ?? '');
  if (version !== null) {
    const [major, minor, patch] = [version[1], version[2], version[3]].map(Number) as [
      number,
      number,
      number,
    ];
    if (major > 26 || (major === 26 && (minor > 2 || (minor === 2 && patch > 6))))
      return `it was written by NetAlertX ${version[0]} (UTC after 26.2.6)`;
  }
  if (eventColumns?.has('eveMac') === true)
    return 'its camelCase history columns come from a NetAlertX that converted them';
  return undefined;
}
