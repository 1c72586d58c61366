/**
 * The API's per-device writes on PostgreSQL as steps on a connection inside a transaction, so that
 * one write (`PostgresDeviceStore.update` / `delete`) and many (`bulkEdit`, macs.ts) share them:
 * a devParentMAC that would close a loop is refused before anything is written, a devName written
 * here is the user's, a delete takes the device's aliases, history, ports and scanner memory with
 * it and frees its children. Column names come only from the catalogue (`toColumns`).
 */
import type { PoolClient } from 'pg';
import type { DeviceChanges, DeviceValue } from '../devices.js';
import { parentCycleError, toColumns } from '../sqlite/devices.js';
import { refuseNul } from './text.js';

/** A devName written through the API is the user's (or, when it is no name, none at all). */
export async function markNameWritten(client: PoolClient, mac: string): Promise<void> {
  await markNamesWritten(client, [mac]);
}

export async function markNamesWritten(client: PoolClient, macs: readonly string[]): Promise<void> {
  await client.query(
    `UPDATE "Devices" SET "devNameSource" = CASE WHEN "devName" IN ('', '(unknown)') THEN '' ELSE 'user' END
     WHERE "devMac" = ANY($1::text[])`,
    [macs],
  );
}

/** A device may not hang under itself or under one of its own descendants (the tree would loop). */
export async function refuseParentCycle(
  client: PoolClient,
  mac: string,
  parent: DeviceValue | undefined,
): Promise<void> {
  if (typeof parent !== 'string' || parent === '') return;
  // Walks devParentMAC up from `parent`; UNION (not ALL) ends the walk on a loop already stored.
  const found = await client.query(
    `WITH RECURSIVE up(mac) AS (
       SELECT $1::text COLLATE "C" UNION SELECT d."devParentMAC" FROM "Devices" d JOIN up ON d."devMac" = up.mac
       WHERE d."devParentMAC" <> '')
     SELECT 1 FROM up WHERE mac = $2 LIMIT 1`,
    [parent, mac],
  );
  if (found.rows.length > 0) throw parentCycleError(mac, parent);
}

/** Sets the given fields only. False when the device does not exist. */
export async function updateDevice(
  client: PoolClient,
  mac: string,
  changes: DeviceChanges,
): Promise<boolean> {
  // Before the loop check's query: a NUL in it would abort the transaction (text.ts).
  refuseNul(changes);
  await refuseParentCycle(client, mac, changes.devParentMAC);
  return (await updateDevices(client, [mac], changes)).size > 0;
}

/**
 * Sets the given fields of these devices in one statement (no parent-loop check: the caller's);
 * the MACs of those that exist. RangeError for a field outside the editable catalogue.
 */
export async function updateDevices(
  client: PoolClient,
  macs: readonly string[],
  changes: DeviceChanges,
): Promise<Set<string>> {
  const columns = toColumns(changes);
  refuseNul(columns);
  const names = Object.keys(columns);
  const set = names.map((name, i) => `"${name}" = $${i + 2}`).join(', ');
  const updated = await client.query<{ devMac: string }>(
    names.length === 0
      ? 'SELECT "devMac" FROM "Devices" WHERE "devMac" = ANY($1::text[])'
      : `UPDATE "Devices" SET ${set} WHERE "devMac" = ANY($1::text[]) RETURNING "devMac"`,
    [macs, ...names.map((name) => columns[name] ?? null)],
  );
  const found = new Set(updated.rows.map((row) => row.devMac));
  // Any devName written through the API is the user's (or, when it is no name, none at all).
  if (found.size > 0 && Object.hasOwn(changes, 'devName')) await markNamesWritten(client, [...found]);
  return found;
}

/** Removes the device, its aliases, history, ports and scanner memory; frees its children. */
export async function deleteDevice(client: PoolClient, mac: string): Promise<boolean> {
  return (await deleteDevices(client, [mac])) > 0;
}

/** deleteDevice for several devices in one statement per table; how many devices were removed. */
export async function deleteDevices(client: PoolClient, macs: readonly string[]): Promise<number> {
  const deleted = await client.query('DELETE FROM "Devices" WHERE "devMac" = ANY($1::text[])', [macs]);
  if (deleted.rowCount === 0) return 0;
  for (const sql of [
    'DELETE FROM "DeviceMacs" WHERE "dma_DevMac" = ANY($1::text[])',
    'DELETE FROM "Events" WHERE "eve_MAC" = ANY($1::text[])',
    'DELETE FROM "Sessions" WHERE "ses_MAC" = ANY($1::text[])',
    'DELETE FROM "ScanState" WHERE "mac" = ANY($1::text[])',
    'DELETE FROM "DevicePorts" WHERE "dpo_MAC" = ANY($1::text[])',
    `DELETE FROM "WatchMemory" WHERE "wat_Kind" = 'ports-scanned' AND "wat_Key" = ANY($1::text[])`,
    `UPDATE "Devices" SET "devParentMAC" = '' WHERE "devParentMAC" = ANY($1::text[])`,
  ])
    await client.query(sql, [macs]);
  return deleted.rowCount ?? 0;
}
