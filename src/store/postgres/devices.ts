/**
 * The device store on PostgreSQL, as far as it is built (`DeviceStore`, ../devices.ts; it
 * implements that interface once every method is here): the MAC and name reads, a device's
 * children and history lists, the device lists (device-lists.ts), merge, split and bulk edits
 * (macs.ts), the names found automatically, and the API's writes (create,
 * update, copy, delete, deleteEvents, resetProps), each in one transaction, with the SQLite store's
 * rules: catalogue defaults and a fresh devGUID for a new
 * device, a MAC that is a device or an alias is not created again, devParentMAC may not close a
 * loop, a devName written here is the user's, a delete takes the device's aliases, history, ports
 * and scanner memory with it and frees its children. Column names come only from the catalogue
 * (`toColumns` refuses any other name).
 */
import { withNameSource } from '../../devices/catalogue.js';
import { dbTime } from '../../time.js';
import type { EventJson, SessionJson } from '../../devices/history.js';
import type { NameUpdate, StoredDeviceName } from '../../devices/presence.js';
import type { Period } from '../../time.js';
import type { DeviceListQuery } from '../../devices/list-query.js';
import type {
  BulkEdit,
  BulkResult,
  CreateResult,
  DeviceChanges,
  DeviceChild,
  DeviceCounts,
  DeviceListItem,
  DeviceStats,
  DeviceTotals,
  DeviceView,
  MacsResult,
  Page,
  PageResult,
  SearchTexts,
  TimedView,
} from '../devices.js';
import {
  childOf,
  defaultCustomProps,
  nameOf,
  toColumns,
  type ChildRow,
  type NameRow,
} from '../sqlite/devices.js';
import { copiedColumns } from '../sqlite/device-sql.js';
import { newDeviceRow } from '../sqlite/rows.js';
import { PostgresDeviceCounts } from './counts.js';
import { PostgresDeviceLists } from './device-lists.js';
import { PostgresDeviceViews } from './device-views.js';
import { PostgresHistoryStore } from './history.js';
import { PostgresMacWrites } from './macs.js';
import type { PostgresPool } from './pool.js';
import { writeNames } from './presence.js';
import { deleteDevice, markNameWritten, refuseParentCycle, updateDevice } from './device-writes.js';
import { combinableUpdate } from './grouped-updates.js';
import { refuseNul } from './text.js';

const nameColumns = 'SELECT "devMac", "devName", "devNameSource", "devFQDN", "devLastIP" FROM "Devices"';

export class PostgresDeviceStore {
  private readonly history: PostgresHistoryStore;
  private readonly lists: PostgresDeviceLists;
  private readonly macWrites: PostgresMacWrites;
  private readonly views: PostgresDeviceViews;
  private readonly kept: PostgresDeviceCounts;

  constructor(private readonly store: PostgresPool) {
    this.history = new PostgresHistoryStore(store);
    this.lists = new PostgresDeviceLists(store);
    this.macWrites = new PostgresMacWrites(store);
    this.views = new PostgresDeviceViews(store);
    this.kept = new PostgresDeviceCounts(store);
  }

  get(mac: string, period: Period, now: Date): Promise<DeviceView | undefined> {
    return this.views.get(mac, period, now);
  }

  getTimed(mac: string, period: Period, now: Date): Promise<TimedView | undefined> {
    return this.views.getTimed(mac, period, now);
  }

  stats(mac: string, period: Period, now: Date): Promise<DeviceStats> {
    return this.views.stats(mac, period, now);
  }

  /** Kept in memory, recounted after a write of this process or `invalidateCounts` (counts.ts). */
  totals(): Promise<DeviceTotals> {
    return this.kept.totals();
  }

  counts(): Promise<DeviceCounts> {
    return this.kept.counts();
  }

  /** Another server changed devices (a NOTIFY change message or a resync): recount on next read. */
  invalidateCounts(): void {
    this.kept.invalidate();
  }

  /** The devMac of the device that has `mac` (own MAC or alias); `mac` itself when none has it. */
  async resolveMac(mac: string): Promise<string> {
    const rows = await this.store.query<{ dma_DevMac: string }>(
      'SELECT "dma_DevMac" FROM "DeviceMacs" WHERE "dma_MAC" = $1',
      [mac],
    );
    return rows[0]?.dma_DevMac ?? mac;
  }

  /** Every alias and the devMac it belongs to. */
  async loadAliases(): Promise<Map<string, string>> {
    const rows = await this.store.query<{ alias: string; devMac: string }>(
      'SELECT "dma_MAC" AS alias, "dma_DevMac" AS "devMac" FROM "DeviceMacs"',
    );
    return new Map(rows.map((row) => [row.alias, row.devMac]));
  }

  merge(to: string, from: string, now: Date): Promise<MacsResult> {
    return this.macWrites.merge(to, from, now);
  }

  split(mac: string, alias: string, now: Date): Promise<MacsResult & { readonly split: string }> {
    return this.macWrites.split(mac, alias, now);
  }

  bulkEdit(macs: readonly string[], edit: BulkEdit): Promise<BulkResult> {
    return this.macWrites.bulkEdit(macs, edit);
  }

  listDevices(query: DeviceListQuery, page: Page): Promise<PageResult<DeviceListItem>> {
    return this.lists.listDevices(query, page);
  }

  listOrder(query: DeviceListQuery): Promise<string[]> {
    return this.lists.listOrder(query);
  }

  listItems(macs: readonly string[]): Promise<(DeviceListItem | undefined)[]> {
    return this.lists.listItems(macs);
  }

  searchTexts(macs?: readonly string[]): Promise<SearchTexts[]> {
    return this.lists.searchTexts(macs);
  }

  async listChildren(mac: string): Promise<DeviceChild[]> {
    const rows = await this.store.query<ChildRow & Record<string, unknown>>(
      `SELECT "devMac", "devName", "devPresentLastScan", "devAlertDown", "devParentRelType", "devParentPort", "devLastIP"
       FROM "Devices" WHERE "devParentMAC" = $1 ORDER BY "devMac"`,
      [mac],
    );
    return rows.map(childOf);
  }

  listEvents(mac: string, period: Period, now: Date, page: Page): Promise<PageResult<EventJson> | undefined> {
    return this.history.listEvents(mac, period, now, page);
  }

  listSessions(
    mac: string,
    period: Period,
    now: Date,
    page: Page,
  ): Promise<PageResult<SessionJson> | undefined> {
    return this.history.listSessions(mac, period, now, page);
  }

  async loadNames(): Promise<Map<string, StoredDeviceName>> {
    const rows = await this.store.query<NameRow & Record<string, unknown>>(nameColumns);
    return new Map(rows.map((row) => [row.devMac, nameOf(row)]));
  }

  async getName(mac: string): Promise<StoredDeviceName | undefined> {
    const rows = await this.store.query<NameRow & Record<string, unknown>>(
      `${nameColumns} WHERE "devMac" = $1`,
      [mac],
    );
    return rows[0] === undefined ? undefined : nameOf(rows[0]);
  }

  /**
   * Stores an automatic name decided by `decide` from the stored one, read and written in one
   * transaction with the row locked; the stored name afterwards (undefined: no such device).
   */
  async resolveName(
    mac: string,
    decide: (stored: StoredDeviceName) => NameUpdate | undefined,
  ): Promise<StoredDeviceName | undefined> {
    return this.store.transaction(async (client) => {
      const read = async (): Promise<StoredDeviceName | undefined> => {
        const rows = await client.query<NameRow & Record<string, unknown>>(
          `${nameColumns} WHERE "devMac" = $1 FOR UPDATE`,
          [mac],
        );
        return rows.rows[0] === undefined ? undefined : nameOf(rows.rows[0]);
      };
      const stored = await read();
      if (stored === undefined) return undefined;
      const update = decide(stored);
      if (update !== undefined) await writeNames(client, [update]);
      return read();
    });
  }

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
    refuseNul(row);
    return this.store.transaction(async (client) => {
      await refuseParentCycle(client, mac, changes.devParentMAC);
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
    // Refused before it joins a group: a NUL would fail the group's combined statement.
    refuseNul(changes);
    // Shares its transaction and fsync with the writes around it (update-column's rate).
    return this.store.grouped((client) => updateDevice(client, mac, changes), combinableUpdate(mac, changes));
  }

  async updateResolved(given: string, changes: DeviceChanges): Promise<string | undefined> {
    const mac = await this.resolveMac(given);
    return (await this.update(mac, changes)) ? mac : undefined;
  }

  /** Removes the device, its aliases, history, ports and scanner memory; frees its children. */
  async delete(mac: string): Promise<boolean> {
    return this.store.transaction((client) => deleteDevice(client, mac));
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

  /**
   * Copies every stored field but devMac from `from` to `to` (created or replaced), with a fresh
   * devGUID; the target's own history stays, its scanner memory goes, its name is the user's. False
   * (nothing changed) when `from` does not exist. Either MAC may be an alias.
   */
  async copy(fromMac: string, toMac: string): Promise<boolean> {
    const columns = copiedColumns.map((c) => `"${c}"`).join(', ');
    return this.store.transaction(async (client) => {
      const resolve = async (mac: string): Promise<string> =>
        (
          await client.query<{ m: string }>(
            'SELECT "dma_DevMac" AS m FROM "DeviceMacs" WHERE "dma_MAC" = $1',
            [mac],
          )
        ).rows[0]?.m ?? mac;
      const from = await resolve(fromMac);
      const to = await resolve(toMac);
      if (from === to) {
        return (await client.query('SELECT 1 FROM "Devices" WHERE "devMac" = $1', [from])).rows.length > 0;
      }
      const copied = await client.query(
        `INSERT INTO "Devices" ("devMac", ${columns}, "devGUID")
         SELECT $2, ${columns}, gen_random_uuid()::text FROM "Devices" WHERE "devMac" = $1
         ON CONFLICT ("devMac") DO UPDATE SET ${[...copiedColumns, 'devGUID'].map((c) => `"${c}" = excluded."${c}"`).join(', ')}`,
        [from, to],
      );
      if (copied.rowCount === 0) return false;
      await client.query('DELETE FROM "ScanState" WHERE "mac" = $1', [to]);
      // A copy writes devName through the API: it is the user's name now.
      await markNameWritten(client, to);
      return true;
    });
  }
}
