/**
 * The device store's writes over several devices on PostgreSQL (`DeviceStore.merge`, `split`,
 * `bulkEdit`, ../devices.ts), each in one transaction, with the SQLite store's rules
 * (src/store/sqlite/devices.ts) and errors: a merge makes `from`'s MACs aliases of the target, moves
 * its events, sessions and children, fills the target's empty fields from it (device-sql.ts
 * `mergedColumns`, written here in PostgreSQL's dialect) and removes it; a split makes an alias a
 * device of its own with no history. The history counts follow through the Events and Sessions
 * triggers, as in SQLite. The devices a merge touches are locked first, in MAC order, so that two
 * merges running together wait for each other instead of deadlocking.
 */
import type { PoolClient } from 'pg';
import { dbTime } from '../../time.js';
import type { BulkEdit, BulkResult, DeviceChanges, MacsResult } from '../devices.js';
import { mergedColumns, type MergeDialect } from '../sqlite/device-sql.js';
import {
  alreadyMergedError,
  bulkFailure,
  notAnAliasError,
  notFoundError,
  sameDeviceError,
} from '../sqlite/devices.js';
import { newDeviceRow } from '../sqlite/rows.js';
import { deleteDevices, updateDevice, updateDevices } from './device-writes.js';
import type { PostgresPool } from './pool.js';
import { refuseNul } from './text.js';

const postgresMerge: MergeDialect = {
  to: (name) => `"Devices"."${name}"`,
  from: (name) => `f."${name}"`,
  least: 'LEAST',
  greatest: 'GREATEST',
};

/** The target's non-empty fields win; its empty ones take from's ($1 the target, $2 from). */
const mergeFieldsSql = `UPDATE "Devices" SET ${mergedColumns(postgresMerge)
  .map(([name, value]) => `"${name}" = ${value}`)
  .join(',\n  ')}
  FROM "Devices" AS f WHERE "Devices"."devMac" = $1 AND f."devMac" = $2`;

interface SeenTimes {
  readonly firstSeen: string | null;
  readonly lastSeen: string | null;
}

async function ownerOf(client: PoolClient, mac: string): Promise<string | undefined> {
  const rows = await client.query<{ owner: string }>(
    'SELECT "dma_DevMac" AS owner FROM "DeviceMacs" WHERE "dma_MAC" = $1',
    [mac],
  );
  return rows.rows[0]?.owner;
}

async function exists(client: PoolClient, mac: string): Promise<boolean> {
  return (await client.query('SELECT 1 FROM "Devices" WHERE "devMac" = $1', [mac])).rows.length > 0;
}

/** The device's own MAC first, then its aliases in order. */
async function macsOf(client: PoolClient, mac: string): Promise<string[]> {
  const rows = await client.query<{ mac: string }>(
    'SELECT "dma_MAC" AS mac FROM "DeviceMacs" WHERE "dma_DevMac" = $1 ORDER BY "dma_MAC"',
    [mac],
  );
  return [mac, ...rows.rows.map((row) => row.mac)];
}

export class PostgresMacWrites {
  constructor(private readonly store: PostgresPool) {}

  async merge(to: string, from: string, now: Date): Promise<MacsResult> {
    return this.store.transaction(async (client) => {
      // Both rows locked before anything is read, in one order whatever the arguments' order.
      await client.query(
        `SELECT 1 FROM "Devices" WHERE "devMac" IN ($1, $2,
           (SELECT "dma_DevMac" FROM "DeviceMacs" WHERE "dma_MAC" = $1)) ORDER BY "devMac" FOR UPDATE`,
        [to, from],
      );
      const target = (await ownerOf(client, to)) ?? to;
      if (!(await exists(client, target))) throw notFoundError(to);
      const owner = await ownerOf(client, from);
      if (owner !== undefined) throw alreadyMergedError(from, owner, target);
      if (!(await exists(client, from))) throw notFoundError(from);
      if (from === target) throw sameDeviceError(to, from);
      const seen = (
        await client.query<SeenTimes>(
          `SELECT "devFirstConnection" AS "firstSeen", "devLastConnection" AS "lastSeen"
           FROM "Devices" WHERE "devMac" = $1`,
          [from],
        )
      ).rows[0];
      const steps: [string, unknown[]][] = [
        [mergeFieldsSql, [target, from]],
        [
          `UPDATE "Devices" SET "devParentMAC" = CASE WHEN "devMac" = $2 THEN '' ELSE $2 END
           WHERE "devParentMAC" = $1`,
          [from, target],
        ],
        // A device never has two open sessions: from's is closed when the target has one.
        [
          `UPDATE "Sessions"
           SET "ses_EventTypeDisconnection" = 'Disconnected', "ses_DateTimeDisconnection" = $3, "ses_StillConnected" = 0
           WHERE "ses_MAC" = $1 AND "ses_StillConnected" = 1
             AND EXISTS (SELECT 1 FROM "Sessions" WHERE "ses_MAC" = $2 AND "ses_StillConnected" = 1)`,
          [from, target, dbTime(now)],
        ],
        // The history moves; the count triggers follow an UPDATE of the MAC.
        ['UPDATE "Events" SET "eve_MAC" = $2 WHERE "eve_MAC" = $1', [from, target]],
        ['UPDATE "Sessions" SET "ses_MAC" = $2 WHERE "ses_MAC" = $1', [from, target]],
        ['UPDATE "DeviceMacs" SET "dma_DevMac" = $2 WHERE "dma_DevMac" = $1', [from, target]],
        ['DELETE FROM "ScanState" WHERE "mac" = $1', [from]],
        ['DELETE FROM "Devices" WHERE "devMac" = $1', [from]],
        [
          `INSERT INTO "DeviceMacs" ("dma_MAC", "dma_DevMac", "dma_FirstSeen", "dma_LastSeen", "dma_Reason")
           VALUES ($1, $2, $3, $4, 'merge')`,
          [from, target, seen?.firstSeen ?? null, seen?.lastSeen ?? null],
        ],
      ];
      for (const [sql, params] of steps) await client.query(sql, params);
      return { devMac: target, devMacs: await macsOf(client, target) };
    });
  }

  async split(mac: string, alias: string, now: Date): Promise<MacsResult & { readonly split: string }> {
    return this.store.transaction(async (client) => {
      const owner = (await ownerOf(client, mac)) ?? mac;
      if (!(await exists(client, owner))) throw notFoundError(mac);
      const seen = (
        await client.query<SeenTimes>(
          `DELETE FROM "DeviceMacs" WHERE "dma_MAC" = $1 AND "dma_DevMac" = $2
           RETURNING "dma_FirstSeen" AS "firstSeen", "dma_LastSeen" AS "lastSeen"`,
          [alias, owner],
        )
      ).rows[0];
      if (seen === undefined) throw notAnAliasError(alias, owner);
      const nowText = dbTime(now);
      // A device of its own again, with no history: what was recorded stays with the device.
      const row = newDeviceRow(alias, {
        devFirstConnection: seen.firstSeen ?? nowText,
        devLastConnection: seen.lastSeen ?? nowText,
        devPresentLastScan: 0,
      });
      await client.query(
        'INSERT INTO "Devices" SELECT * FROM json_populate_record(NULL::"Devices", $1::json)',
        [JSON.stringify(row)],
      );
      return { devMac: owner, devMacs: await macsOf(client, owner), split: alias };
    });
  }

  /**
   * One edit for each device (its own MAC or an alias), in one transaction; a device that is gone
   * or whose edit a rule refuses (PARENT_CYCLE, checked before its write) is reported in `failed`.
   * SQLite walks the MACs one by one; so does this when the edit sets a devParentMAC (each loop
   * check sees the parents set before it). Any other edit is planned in JavaScript with SQLite's
   * walk (the same changed and failed lists) and written in one statement per table: 10,000
   * devices are not 30,000 round trips.
   */
  async bulkEdit(macs: readonly string[], edit: BulkEdit): Promise<BulkResult> {
    // Before any statement: a NUL in a query would abort the whole transaction (text.ts).
    if ('set' in edit) refuseNul(edit.set);
    return this.store.transaction(async (client) => {
      if ('set' in edit && typeof edit.set.devParentMAC === 'string' && edit.set.devParentMAC !== '')
        return this.bulkOneByOne(client, macs, edit.set);
      const result: BulkResult = { changed: [], failed: [] };
      if (macs.length === 0) return result;
      const deleting = 'delete' in edit;
      const aliases = new Map(
        (
          await client.query<{ alias: string; owner: string }>(
            'SELECT "dma_MAC" AS alias, "dma_DevMac" AS owner FROM "DeviceMacs" WHERE "dma_MAC" = ANY($1::text[])',
            [macs],
          )
        ).rows.map((row) => [row.alias, row.owner]),
      );
      const candidates = [...new Set([...macs, ...aliases.values()])];
      const existing = new Set(
        (
          await client.query<{ devMac: string }>(
            // Locked in MAC order, like the merge's: two bulk edits wait, never deadlock.
            'SELECT "devMac" FROM "Devices" WHERE "devMac" = ANY($1::text[]) ORDER BY "devMac" FOR UPDATE',
            [candidates],
          )
        ).rows.map((row) => row.devMac),
      );
      // SQLite's walk: a device deleted earlier in the list took its aliases with it, so an alias
      // of it given later is a MAC of no device then.
      const seen = new Set<string>();
      const changed = new Set<string>();
      for (const given of macs) {
        const owner = aliases.get(given);
        const mac = owner !== undefined && !(deleting && changed.has(owner)) ? owner : given;
        if (seen.has(mac)) continue; // a MAC and its alias, or the same MAC twice: one device
        seen.add(mac);
        if (existing.has(mac)) {
          changed.add(mac);
          result.changed.push(mac);
        } else result.failed.push(bulkFailure(given, notFoundError(given)));
      }
      if ('set' in edit) {
        // SQLite's first update reads the fields: an unknown one fails the edit even with no device.
        const updated = await updateDevices(client, result.changed, edit.set);
        if (updated.size !== result.changed.length)
          throw new Error('bulk edit: devices changed while locked');
      } else if (result.changed.length > 0) await deleteDevices(client, result.changed);
      return result;
    });
  }

  /** SQLite's bulk edit step by step: each device's parent-loop check sees the parents set before it. */
  private async bulkOneByOne(
    client: PoolClient,
    macs: readonly string[],
    changes: DeviceChanges,
  ): Promise<BulkResult> {
    const result: BulkResult = { changed: [], failed: [] };
    const seen = new Set<string>();
    for (const given of macs) {
      const mac = (await ownerOf(client, given)) ?? given;
      if (seen.has(mac)) continue;
      seen.add(mac);
      try {
        if (await updateDevice(client, mac, changes)) result.changed.push(mac);
        else result.failed.push(bulkFailure(given, notFoundError(given)));
      } catch (err) {
        result.failed.push(bulkFailure(given, err));
      }
    }
    return result;
  }
}
