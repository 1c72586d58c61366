/**
 * The reads and writes behind NetAlertX's endpoints on PostgreSQL (interface: ../compat.ts), with
 * the SQLite store's answers (sqlite/compat.ts): lists read in pages by key, in the same order
 * (COLLATE "C" sorts as SQLite's binary order), NetAlertX's session totals with SQLite's
 * conditions (its LIKE ignores ASCII case: ILIKE here), and a CSV import in one transaction.
 */
import type { PoolClient } from 'pg';
import { storedFields, withNameSource, type DbValue, type DeviceRow } from '../../devices/catalogue.js';
import { eventColumns } from '../../devices/history.js';
import { dbTime } from '../../time.js';
import type {
  ByStatusGroup,
  CompatEvent,
  CompatStore,
  EventCursor,
  ImportedDevice,
  SessionTotals,
  StatusItem,
} from '../compat.js';
import type { DeviceChanges } from '../devices.js';
import { eventPage, topCursor, type EventListRow } from '../sqlite/compat.js';
import { newDeviceRow } from '../sqlite/rows.js';
import type { PostgresPool } from './pool.js';
import { refuseNul } from './text.js';
import { groupPredicate } from './status-sql.js';

const storedNames = new Set(storedFields.map((f) => f.name));
const columnList = storedFields.map((f) => `"${f.name}"`).join(', ');
const eventSelect = `SELECT "rowid", ${eventColumns.map((c) => `"${c}"`).join(', ')}, "eve_PairEventRowid" FROM "Events"`;
const eventOrder = 'ORDER BY "eve_DateTime" DESC, "eve_EventType" DESC, "rowid" DESC';
const eventAfter = '("eve_DateTime", "eve_EventType", "rowid") < ($1, $2, $3)';

const sessionTotalsSql = `SELECT
    (SELECT count(*) FROM "Events" WHERE "eve_DateTime" >= $1) AS "events",
    (SELECT count(*) FROM "Sessions" WHERE "ses_DateTimeConnection" >= $1
       OR "ses_DateTimeDisconnection" >= $1 OR "ses_StillConnected" = 1) AS "sessions",
    (SELECT count(*) FROM "Sessions" WHERE
       ("ses_DateTimeConnection" IS NULL AND "ses_DateTimeDisconnection" >= $1)
       OR ("ses_DateTimeDisconnection" IS NULL AND "ses_StillConnected" = 0 AND "ses_DateTimeConnection" >= $1)) AS "missing",
    (SELECT count(*) FROM "Events" WHERE "eve_DateTime" >= $1 AND "eve_EventType" ILIKE 'VOIDED%') AS "voided",
    (SELECT count(*) FROM "Events" WHERE "eve_DateTime" >= $1 AND "eve_EventType" = 'New Device') AS "new",
    (SELECT count(*) FROM "Events" WHERE "eve_DateTime" >= $1 AND "eve_EventType" = 'Device Down') AS "down"`;

/** Sorts after every stored value: the start of a newest-first walk. */

export class PostgresCompatStore implements CompatStore {
  constructor(private readonly store: PostgresPool) {}

  async byStatusAfter(
    group: ByStatusGroup | undefined,
    afterMac: string,
    limit: number,
  ): Promise<StatusItem[]> {
    const where = group === undefined ? '' : `AND (${groupPredicate(group)})`;
    return this.store.query<StatusItem & Record<string, unknown>>(
      `SELECT "devMac" AS "id", "devName" AS "title", "devFavorite" AS "favorite" FROM "Devices"
       WHERE "devMac" > $1 ${where} ORDER BY "devMac" LIMIT $2`,
      [afterMac, limit],
    );
  }

  async devicesAfter(afterMac: string, limit: number): Promise<DeviceRow[]> {
    return this.store.query<DeviceRow>(
      `SELECT ${columnList} FROM "Devices" WHERE "devMac" > $1 ORDER BY "devMac" LIMIT $2`,
      [afterMac, limit],
    );
  }

  async eventsAfter(
    mac: string | undefined,
    cursor: EventCursor | undefined,
    limit: number,
  ): Promise<{ events: CompatEvent[]; next: EventCursor | undefined }> {
    const { time, type, rowid } = cursor ?? topCursor;
    const rows = await this.store.query<EventListRow & Record<string, unknown>>(
      mac === undefined
        ? `${eventSelect} WHERE ${eventAfter} ${eventOrder} LIMIT $4`
        : `${eventSelect} WHERE "eve_MAC" = $5 AND ${eventAfter} ${eventOrder} LIMIT $4`,
      mac === undefined ? [time, type, rowid, limit] : [time, type, rowid, limit, mac],
    );
    return eventPage(rows, limit);
  }

  async sessionTotals(start: Date | null): Promise<SessionTotals> {
    const rows = await this.store.query<Record<string, number>>(sessionTotalsSql, [
      start === null ? '' : dbTime(start),
    ]);
    const row = rows[0] ?? {};
    return ['events', 'sessions', 'missing', 'voided', 'new', 'down'].map(
      (key) => row[key] ?? 0,
    ) as SessionTotals;
  }

  /**
   * Upserts every device in one transaction, in the CSV's order: a MAC that is no device yet is
   * inserted (a second row of it in the same CSV then updates it), any other gets the given columns.
   */
  async importDevices(
    devices: readonly ImportedDevice[],
    now: Date,
  ): Promise<{ inserted: string[]; updated: string[] }> {
    const nowText = dbTime(now);
    return this.store.transaction(async (client) => {
      const existing = await client.query<{ devMac: string }>(
        'SELECT "devMac" FROM "Devices" WHERE "devMac" = ANY($1::text[]) FOR UPDATE',
        [devices.map((d) => d.mac)],
      );
      const known = new Set(existing.rows.map((r) => r.devMac));
      const inserted: string[] = [];
      const updated: string[] = [];
      const newRows: DeviceRow[] = [];
      const updates: { mac: string; changes: DeviceChanges }[] = [];
      for (const device of devices) {
        // A CSV import writes devName through the API: a name it gives is the user's.
        const changes = withNameSource(device.changes, 'user');
        refuseNul(changes, device.mac);
        if (!known.has(device.mac)) {
          known.add(device.mac);
          const row = newDeviceRow(device.mac, {
            devFirstConnection: nowText,
            devLastConnection: nowText,
            ...(changes as Record<string, DbValue>),
          });
          if (device.guid !== undefined) row.devGUID = device.guid;
          newRows.push(row);
          inserted.push(device.mac);
        } else {
          updates.push({ mac: device.mac, changes });
          updated.push(device.mac);
        }
      }
      // The new devices in one statement, before the updates (a later row of the CSV may name one).
      if (newRows.length > 0)
        await client.query(
          `INSERT INTO "Devices" SELECT * FROM json_populate_recordset(NULL::"Devices", $1::json)`,
          [JSON.stringify(newRows)],
        );
      for (const { mac, changes } of updates) await this.update(client, mac, changes);
      return { inserted, updated };
    });
  }

  /** One device's given columns: catalogue names only (anything else is refused, never quoted in). */
  private async update(client: PoolClient, mac: string, changes: DeviceChanges): Promise<void> {
    const names = Object.keys(changes);
    if (names.length === 0) return;
    for (const name of names)
      if (!storedNames.has(name)) throw new RangeError(`'${name}' is not a stored device field`);
    await client.query(
      `UPDATE "Devices" SET ${names.map((n, i) => `"${n}" = $${i + 2}`).join(', ')} WHERE "devMac" = $1`,
      [mac, ...names.map((n) => changes[n] ?? null)],
    );
  }
}
