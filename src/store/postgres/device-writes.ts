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

/** A devName written through the API is the user's (or, when it is no name, none at all). */
export async function markNameWritten(client: PoolClient, mac: string): Promise<void> {
  await client.query(
    `UPDATE "Devices" SET "devNameSource" = CASE WHEN "devName" IN ('', '(unknown)') THEN '' ELSE 'user' END
     WHERE "devMac" = $1`,
    [mac],
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
  await refuseParentCycle(client, mac, changes.devParentMAC);
  const columns = toColumns(changes);
  const names = Object.keys(columns);
  const set = names.map((name, i) => `"${name}" = $${i + 2}`).join(', ');
  const updated = await client.query(
    names.length === 0
      ? 'SELECT 1 FROM "Devices" WHERE "devMac" = $1'
      : `UPDATE "Devices" SET ${set} WHERE "devMac" = $1`,
    [mac, ...names.map((name) => columns[name] ?? null)],
  );
  const found = (updated.rowCount ?? 0) > 0;
  // Any devName written through the API is the user's (or, when it is no name, none at all).
  if (found && Object.hasOwn(changes, 'devName')) await markNameWritten(client, mac);
  return found;
}

/** Removes the device, its aliases, history, ports and scanner memory; frees its children. */
export async function deleteDevice(client: PoolClient, mac: string): Promise<boolean> {
  const deleted = await client.query('DELETE FROM "Devices" WHERE "devMac" = $1', [mac]);
  if (deleted.rowCount === 0) return false;
  for (const sql of [
    'DELETE FROM "DeviceMacs" WHERE "dma_DevMac" = $1',
    'DELETE FROM "Events" WHERE "eve_MAC" = $1',
    'DELETE FROM "Sessions" WHERE "ses_MAC" = $1',
    'DELETE FROM "ScanState" WHERE "mac" = $1',
    'DELETE FROM "DevicePorts" WHERE "dpo_MAC" = $1',
    `DELETE FROM "WatchMemory" WHERE "wat_Kind" = 'ports-scanned' AND "wat_Key" = $1`,
    `UPDATE "Devices" SET "devParentMAC" = '' WHERE "devParentMAC" = $1`,
  ])
    await client.query(sql, [mac]);
  return true;
}
