/**
 * The device readouts on PostgreSQL (interface: ../readouts.ts), with the SQLite store's answers
 * (sqlite/readouts.ts): each is one query however many devices, in MAC order (COLLATE "C", as
 * SQLite's binary order).
 */
import { deviceStatus } from '../../devices/status.js';
import { fromDbTime } from '../../time.js';
import type { DeviceReadouts, DeviceStatusRow, DeviceSummary, TrackedDevice } from '../readouts.js';
import type { PostgresPool } from './pool.js';

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

const trackedColumns = `"devMac", "devName", "devVendor", "devLastIP", "devLastConnection", "devPresentLastScan",
  "devAlertDown", "devIsArchived"`;

const tracked = (row: TrackedDevice): TrackedDevice => ({
  ...row,
  devLastConnection: row.devLastConnection === null ? null : fromDbTime(row.devLastConnection),
});

export class PostgresReadouts implements DeviceReadouts {
  constructor(private readonly store: PostgresPool) {}

  async summaries(macs: readonly string[]): Promise<Map<string, DeviceSummary>> {
    const summaries = new Map<string, DeviceSummary>();
    if (macs.length === 0) return summaries;
    // The MACs travel as one array parameter: one statement, whatever their number.
    const rows = await this.store.query<SummaryRow>(
      `SELECT "devMac", "devName", "devOwner", "devType", "devVendor", "devLastIP", "devPresentLastScan", "devAlertDown"
       FROM "Devices" WHERE "devMac" = ANY($1::text[])`,
      [[...macs]],
    );
    for (const row of rows)
      summaries.set(row.devMac, {
        devName: row.devName ?? '',
        devOwner: row.devOwner ?? '',
        devType: row.devType ?? '',
        devVendor: row.devVendor ?? '',
        devLastIP: row.devLastIP ?? '',
        devStatus: deviceStatus(row.devPresentLastScan, row.devAlertDown),
      });
    return summaries;
  }

  async trackedDevices(): Promise<TrackedDevice[]> {
    const rows = await this.store.query<TrackedDevice & Record<string, unknown>>(
      `SELECT ${trackedColumns} FROM "Devices" ORDER BY "devMac"`,
    );
    return rows.map(tracked);
  }

  async trackedDevice(mac: string): Promise<TrackedDevice | undefined> {
    const rows = await this.store.query<TrackedDevice & Record<string, unknown>>(
      `SELECT ${trackedColumns} FROM "Devices" WHERE "devMac" = $1`,
      [mac],
    );
    return rows[0] === undefined ? undefined : tracked(rows[0]);
  }

  async statusRows(maxLabelChars: number): Promise<DeviceStatusRow[]> {
    // Text read one character past the label bound (the caller marks the cut), not the whole 16 KB.
    const cut = (column: string): string => `substr("${column}", 1, $1) AS "${column}"`;
    return this.store.query<DeviceStatusRow & Record<string, unknown>>(
      `SELECT ${cut('devName')}, "devMac", ${cut('devLastIP')}, ${cut('devVendor')}, "devFirstConnection",
         "devLastConnection", ${cut('devType')},
         CASE
           WHEN "devIsNew" IS NOT DISTINCT FROM 1 THEN 'New'
           WHEN "devPresentLastScan" IS NOT DISTINCT FROM 1 THEN 'Online'
           WHEN "devAlertDown" IS NOT DISTINCT FROM 1 THEN 'Down'
           WHEN "devIsArchived" IS NOT DISTINCT FROM 1 THEN 'Archived'
           ELSE 'Offline'
         END AS "status"
       FROM "Devices" ORDER BY "devMac"`,
      [maxLabelChars + 1],
    );
  }
}
