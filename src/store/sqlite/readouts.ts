/**
 * The SQLite device readouts (interface: ../readouts.ts). Statements are prepared once.
 */
import type { Database, Statement } from 'better-sqlite3';
import { deviceStatus } from '../../devices/status.js';
import { fromDbTime } from '../../time.js';
import { settled } from './device-store.js';
import type { DeviceReadouts, DeviceStatusRow, DeviceSummary, TrackedDevice } from '../readouts.js';

interface SummaryRow {
  devMac: string;
  devName: string | null;
  devOwner: string | null;
  devType: string | null;
  devVendor: string | null;
  devLastIP: string | null;
  devPresentLastScan: number | null;
  devAlertDown: number | null;
}

const trackedColumns =
  'devMac, devName, devVendor, devLastIP, devLastConnection, devPresentLastScan, devAlertDown, devIsArchived';

const tracked = (row: TrackedDevice): TrackedDevice => ({
  ...row,
  devLastConnection: row.devLastConnection === null ? null : fromDbTime(row.devLastConnection),
});

export class SqliteReadouts implements DeviceReadouts {
  private readonly summaryStmt: Statement<[string], SummaryRow>;
  private readonly allTracked: Statement<[], TrackedDevice>;
  private readonly oneTracked: Statement<[string], TrackedDevice>;
  private readonly statusStmts = new Map<number, Statement<[], DeviceStatusRow>>();

  constructor(private readonly db: Database) {
    // The MACs travel as one JSON array parameter: one statement, whatever their number.
    this.summaryStmt = db.prepare(
      `SELECT devMac, devName, devOwner, devType, devVendor, devLastIP, devPresentLastScan, devAlertDown
         FROM Devices WHERE devMac IN (SELECT value FROM json_each(?))`,
    );
    this.allTracked = db.prepare(`SELECT ${trackedColumns} FROM Devices ORDER BY devMac`);
    this.oneTracked = db.prepare(`SELECT ${trackedColumns} FROM Devices WHERE devMac = ?`);
  }

  summaries(macs: readonly string[]): Promise<Map<string, DeviceSummary>> {
    return settled(() => {
      const summaries = new Map<string, DeviceSummary>();
      if (macs.length === 0) return summaries;
      for (const row of this.summaryStmt.all(JSON.stringify(macs))) {
        summaries.set(row.devMac, {
          devName: row.devName ?? '',
          devOwner: row.devOwner ?? '',
          devType: row.devType ?? '',
          devVendor: row.devVendor ?? '',
          devLastIP: row.devLastIP ?? '',
          devStatus: deviceStatus(row.devPresentLastScan, row.devAlertDown),
        });
      }
      return summaries;
    });
  }

  trackedDevices(): Promise<TrackedDevice[]> {
    return settled(() => {
      return this.allTracked.all().map(tracked);
    });
  }

  trackedDevice(mac: string): Promise<TrackedDevice | undefined> {
    return settled(() => {
      const row = this.oneTracked.get(mac);
      return row === undefined ? undefined : tracked(row);
    });
  }

  statusRows(maxLabelChars: number): Promise<DeviceStatusRow[]> {
    return settled(() => {
      let statement = this.statusStmts.get(maxLabelChars);
      if (statement === undefined) {
        // Text read one character past the label bound (the caller marks the cut), not the whole 16 KB.
        const cut = (column: string): string => `substr(${column}, 1, ${maxLabelChars + 1}) AS ${column}`;
        statement = this.db.prepare<[], DeviceStatusRow>(`
          SELECT ${cut('devName')}, devMac, ${cut('devLastIP')}, ${cut('devVendor')}, devFirstConnection,
            devLastConnection, ${cut('devType')},
            CASE
              WHEN devIsNew IS 1 THEN 'New'
              WHEN devPresentLastScan IS 1 THEN 'Online'
              WHEN devAlertDown IS 1 THEN 'Down'
              WHEN devIsArchived IS 1 THEN 'Archived'
              ELSE 'Offline'
            END AS status
          FROM Devices ORDER BY devMac`);
        this.statusStmts.set(maxLabelChars, statement);
      }
      return statement.all();
    });
  }
}
