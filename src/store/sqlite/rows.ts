/** Device rows as the SQLite engine inserts them, and the hooks of a cycle's transaction. */
import { randomUUID } from 'node:crypto';
import { defaultDeviceJson, jsonToColumns, type DbValue, type DeviceRow } from '../../devices/catalogue.js';

/** Every stored field's default, as column values. */
export const defaultColumns: Readonly<Record<string, DbValue>> = jsonToColumns(defaultDeviceJson());

/**
 * The row of a new device, however it is made (POST createNew or the scanner): the catalogue
 * defaults, then `columns`, then its MAC and a fresh devGUID. Inserted with `deviceSql.insert`.
 */
export function newDeviceRow(mac: string, columns: Readonly<DeviceRow>): DeviceRow {
  return { ...defaultColumns, ...columns, devMac: mac, devGUID: randomUUID() };
}

/** Called inside a cycle's transaction, after its writes and before COMMIT. */
export interface CoreApplyHooks {
  readonly beforeCommit?: () => void;
  readonly testOnlyBeforeCommit?: () => void;
}
