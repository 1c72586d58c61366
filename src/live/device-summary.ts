/**
 * The device fields of a `device-event` (the webhook event's `device`), for many devices in one
 * query: a cycle can write thousands of events, read back once after it committed.
 */
import type { Database } from 'better-sqlite3';
import { deviceStatus } from '../devices/status.js';
import type { DeviceSummary } from './hub.js';

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

export function deviceSummaryReader(db: Database): (macs: readonly string[]) => Map<string, DeviceSummary> {
  // The MACs travel as one JSON array parameter: one statement, whatever their number.
  const select = db.prepare<[string], SummaryRow>(
    `SELECT devMac, devName, devOwner, devType, devVendor, devLastIP, devPresentLastScan, devAlertDown
       FROM Devices WHERE devMac IN (SELECT value FROM json_each(?))`,
  );
  return (macs) => {
    const summaries = new Map<string, DeviceSummary>();
    if (macs.length === 0) return summaries;
    for (const row of select.all(JSON.stringify(macs))) {
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
  };
}
