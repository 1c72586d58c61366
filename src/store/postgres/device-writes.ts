/**
 * The device store's writes through the API on PostgreSQL (`DeviceStore.create`, `update`,
 * `delete`, `deleteEvents`, `resetProps`, ../devices.ts), each in one
 * transaction, with the SQLite store's rules: catalogue defaults and a fresh devGUID for a new
 * device, a MAC that is a device or an alias is not created again, devParentMAC may not close a
 * loop, a devName written here is the user's, a delete takes the device's aliases, history, ports
 * and scanner memory with it and frees its children. Column names come only from the catalogue
 * (`toColumns` refuses any other name).
 */
import type { PoolClient } from 'pg';
import { withNameSource } from '../../devices/catalogue.js';
import { dbTime } from '../../time.js';
import type { CreateResult, DeviceChanges, DeviceValue } from '../devices.js';
import { defaultCustomProps, newDeviceRow, parentCycleError, toColumns } from '../sqlite/devices.js';
import type { PostgresPool } from './pool.js';

export class PostgresDeviceWrites {
  constructor(private readonly store: PostgresPool) {}

  /** Creates a device ('exists' when the MAC is a device or an alias already). */
  async create(mac: string, changes: DeviceChanges, now: Date): Promise<CreateResult> {
    const nowText = dbTime(now);
    const row = newDeviceRow(
      mac,
      withNameSource(
        { devFirstConnection: nowText, devLastConnection: nowText, ...toColumns(changes) },
        'user',
      ),
    );
    return this.store.transaction(async (client) => {
      await this.refuseParentCycle(client, mac, changes.devParentMAC);
      const alias = await client.query('SELECT 1 FROM "DeviceMacs" WHERE "dma_MAC" = $1', [mac]);
      if (alias.rows.length > 0) return 'exists';
      const inserted = await client.query(
        `INSERT INTO "Devices" SELECT * FROM json_populate_record(NULL::"Devices", $1::json)
         ON CONFLICT ("devMac") DO NOTHING`,
        [JSON.stringify(row)],
      );
      return inserted.rowCount === 1 ? 'created' : 'exists';
    });
  }

  /** Sets the given fields only. False when the device does not exist. */
  async update(mac: string, changes: DeviceChanges): Promise<boolean> {
    const columns = toColumns(changes);
    const names = Object.keys(columns);
    return this.store.transaction(async (client) => {
      await this.refuseParentCycle(client, mac, changes.devParentMAC);
      const set = names.map((name, i) => `"${name}" = $${i + 2}`).join(', ');
      const updated = await client.query(
        names.length === 0
          ? 'SELECT 1 FROM "Devices" WHERE "devMac" = $1'
          : `UPDATE "Devices" SET ${set} WHERE "devMac" = $1`,
        [mac, ...names.map((name) => columns[name] ?? null)],
      );
      const found = (updated.rowCount ?? 0) > 0;
      // Any devName written through the API is the user's (or, when it is no name, none at all).
      if (found && Object.hasOwn(changes, 'devName')) {
        await client.query(
          `UPDATE "Devices" SET "devNameSource" = CASE WHEN "devName" IN ('', '(unknown)') THEN '' ELSE 'user' END
           WHERE "devMac" = $1`,
          [mac],
        );
      }
      return found;
    });
  }

  /** Removes the device, its aliases, history, ports and scanner memory; frees its children. */
  async delete(mac: string): Promise<boolean> {
    return this.store.transaction(async (client) => {
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
    });
  }

  /** Removes the device's events, sessions and scanner memory; the device stays. */
  async deleteEvents(mac: string): Promise<boolean> {
    return this.store.transaction(async (client) => {
      const found = await client.query('SELECT 1 FROM "Devices" WHERE "devMac" = $1 FOR UPDATE', [mac]);
      if (found.rows.length === 0) return false;
      for (const sql of [
        'DELETE FROM "Events" WHERE "eve_MAC" = $1',
        'DELETE FROM "Sessions" WHERE "ses_MAC" = $1',
        'DELETE FROM "ScanState" WHERE "mac" = $1',
      ])
        await client.query(sql, [mac]);
      return true;
    });
  }

  /** devCustomProps back to its catalogue default. False when the device does not exist. */
  async resetProps(mac: string): Promise<boolean> {
    const rows = await this.store.query<{ devMac: string }>(
      'UPDATE "Devices" SET "devCustomProps" = $1 WHERE "devMac" = $2 RETURNING "devMac"',
      [defaultCustomProps, mac],
    );
    return rows.length > 0;
  }

  /** A device may not hang under itself or under one of its own descendants (the tree would loop). */
  private async refuseParentCycle(
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
}
