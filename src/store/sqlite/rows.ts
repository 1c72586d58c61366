/**
 * Device rows as the SQLite engine inserts and reads them, and the hooks of a cycle's transaction.
 */
import { randomUUID } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
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

/**
 * `statement.get`, with the row object built here from the raw column values (the statement is
 * switched to raw mode). better-sqlite3 builds a row object property by property through V8's C++
 * API: for a device's ~45 columns, reading one and turning it into its JSON cost about 4 µs more
 * that way, and a device's answer read anew took ~30 µs in all (docs/benchmarks-history.md).
 */
export function rowGetter<P extends unknown[], R extends object>(
  statement: Statement<P, R>,
): (...params: P) => R | undefined {
  const raw = statement.raw(true) as unknown as Statement<P, unknown[]>;
  const names = raw.columns().map((column) => column.name);
  return (...params: P): R | undefined => {
    const values = raw.get(...params);
    if (values === undefined) return undefined;
    const row: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) row[names[i] as string] = values[i];
    return row as R;
  };
}
