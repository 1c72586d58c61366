/**
 * The database being imported: a NetAlertX `app.db` or a Pi.Alert `pialert.db`, opened read-only
 * (never written, never created). The two are told apart by their Devices columns (`devMac` or
 * `dev_MAC`); the mapping of each source column to a catalogue field is written out here, by
 * meaning, once. Only columns that exist in the file are read, so a database from any version
 * works: what it lacks takes the catalogue's defaults.
 */
import Database from 'better-sqlite3';
import { DomainError } from '../errors.js';
import { fieldsByName } from '../devices/catalogue.js';

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
  close(): void;
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

/** Opens `path` read-only and works out what it is; an `invalid` DomainError when it is neither. */
export function openSource(path: string): Source {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma('query_only = ON');
    db.prepare('SELECT count(*) FROM sqlite_master').get(); // fails here when it is not SQLite
  } catch (err) {
    throw new DomainError(
      'invalid',
      `${path} cannot be opened as a SQLite database: ${(err as Error).message}`,
      {
        code: 'IMPORT_SOURCE_UNREADABLE',
        cause: err,
      },
    );
  }
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
    db.close();
    throw new DomainError(
      'invalid',
      `${path} is not a NetAlertX or Pi.Alert database: its Devices table has neither devMac nor dev_MAC.`,
      { code: 'IMPORT_SOURCE_UNKNOWN' },
    );
  }
  let timeZoneSetting: string | undefined;
  if (tableExists(db, 'Settings') && columnsOf(db, 'Settings').includes('setKey')) {
    const value = db.prepare("SELECT setValue FROM Settings WHERE setKey = 'TIMEZONE'").pluck().get();
    if (typeof value === 'string' && value.trim() !== '')
      timeZoneSetting = value.trim().replace(/^['"]|['"]$/g, '');
  }
  return {
    kind,
    db,
    deviceColumns,
    hasEvents: tableExists(db, 'Events'),
    hasSessions: tableExists(db, 'Sessions'),
    timeZoneSetting,
    close: () => {
      db.close();
    },
  };
}
