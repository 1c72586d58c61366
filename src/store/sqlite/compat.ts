/**
 * The SQLite side of the reads and writes behind NetAlertX's endpoints (interface: ../compat.ts). Statements are prepared once; lists are read in pages by key (never an open
 * iterator across awaits, which would hold the connection), so a route can stream them.
 */
import type { Database, Statement } from 'better-sqlite3';
import { storedFields, withNameSource, type DbValue, type DeviceRow } from '../../devices/catalogue.js';
import { eventColumns, eventToJson, type EventRow } from '../../devices/history.js';
import type { DeviceChanges } from '../devices.js';
import { newDeviceRow } from './rows.js';
import { deviceSql } from './device-sql.js';
import type {
  ByStatusGroup,
  CompatEvent,
  CompatStore,
  EventCursor,
  ImportedDevice,
  SessionTotals,
  StatusItem,
} from '../compat.js';
import { dbTime } from '../../time.js';
import { settled } from './device-store.js';
import type { SqliteDevices } from './devices.js';
import { deviceGroups, presenceGroups, type DeviceGroup, type PresenceGroup } from '../../devices/status.js';
import { deviceGroupSql, presenceGroupSql } from './status-sql.js';

const columnList = storedFields.map((f) => f.name).join(', ');
const eventSelect = `SELECT rowid, ${eventColumns.join(', ')}, eve_PairEventRowid FROM Events`;
/** Newest first in the order of Events_mac_time / Events_time, so pages walk an index. */
const eventOrder = 'ORDER BY eve_DateTime DESC, eve_EventType DESC, rowid DESC';
const eventAfter = '(eve_DateTime, eve_EventType, rowid) < (@time, @type, @rowid)';

export const compatSql = {
  byStatusAfter: (group: ByStatusGroup | undefined) =>
    `SELECT devMac AS id, devName AS title, devFavorite AS favorite FROM Devices
     WHERE devMac > ? ${group === undefined ? '' : `AND (${byStatusSql(group)})`} ORDER BY devMac LIMIT ?`,
  devicesAfter: `SELECT ${columnList} FROM Devices WHERE devMac > ? ORDER BY devMac LIMIT ?`,
  eventsOfMac: `${eventSelect} WHERE eve_MAC = @mac AND ${eventAfter} ${eventOrder} LIMIT @limit`,
  eventsOfAll: `${eventSelect} WHERE ${eventAfter} ${eventOrder} LIMIT @limit`,
  // NetAlertX's own conditions (its sessions totals), with the period start as a parameter.
  sessionTotals: `SELECT
      (SELECT COUNT(*) FROM Events WHERE eve_DateTime >= @start),
      (SELECT COUNT(*) FROM Sessions WHERE ses_DateTimeConnection >= @start
         OR ses_DateTimeDisconnection >= @start OR ses_StillConnected = 1),
      (SELECT COUNT(*) FROM Sessions WHERE
         (ses_DateTimeConnection IS NULL AND ses_DateTimeDisconnection >= @start)
         OR (ses_DateTimeDisconnection IS NULL AND ses_StillConnected = 0 AND ses_DateTimeConnection >= @start)),
      (SELECT COUNT(*) FROM Events WHERE eve_DateTime >= @start AND eve_EventType LIKE 'VOIDED%'),
      (SELECT COUNT(*) FROM Events WHERE eve_DateTime >= @start AND eve_EventType = 'New Device'),
      (SELECT COUNT(*) FROM Events WHERE eve_DateTime >= @start AND eve_EventType = 'Device Down')`,
};

function byStatusSql(group: ByStatusGroup): string {
  return (presenceGroups as readonly string[]).includes(group)
    ? presenceGroupSql(group as PresenceGroup)
    : deviceGroupSql(group as DeviceGroup);
}

/** Sorts after every stored value: the start of a newest-first walk. */
export const topCursor: EventCursor = { time: '\uffff', type: '\uffff', rowid: Number.MAX_SAFE_INTEGER };

/** An Events row of a page of NetAlertX's event list, with its key and its pair's. */
export type EventListRow = EventRow & { rowid: number; eve_PairEventRowid: number | null };

/** A page of events (newest first, at most `limit`) and the cursor of the next one (both stores). */
export function eventPage(
  rows: readonly EventListRow[],
  limit: number,
): { events: CompatEvent[]; next: EventCursor | undefined } {
  const last = rows[rows.length - 1];
  return {
    events: rows.map(({ rowid: _rowid, eve_PairEventRowid, ...row }) => ({
      ...eventToJson(row),
      eve_PairEventRowid,
    })),
    next:
      last === undefined || rows.length < limit
        ? undefined
        : { time: last.eve_DateTime, type: last.eve_EventType, rowid: last.rowid },
  };
}

export class SqliteCompatStore implements CompatStore {
  private readonly byStatusStmts: ReadonlyMap<string, Statement<[string, number], StatusItem>>;
  private readonly devicesAfterStmt: Statement<[string, number], DeviceRow>;
  private readonly eventsOfMacStmt: Statement<[Record<string, unknown>], EventListRow>;
  private readonly eventsOfAllStmt: Statement<[Record<string, unknown>], EventListRow>;
  private readonly sessionTotalsStmt: Statement<[{ start: string }], number[]>;
  private readonly existsStmt: Statement<[string]>;
  private readonly insertStmt: Statement<[Record<string, DbValue>]>;
  private readonly updateStmts = new Map<string, Statement<[Record<string, DbValue>]>>();
  private readonly importTx: (
    devices: readonly ImportedDevice[],
    now: string,
  ) => { inserted: string[]; updated: string[] };

  /** @param core whose group commit the import shares (the caches and counts see it like any write) */
  constructor(
    private readonly db: Database,
    private readonly core: Pick<SqliteDevices, 'write'>,
  ) {
    this.byStatusStmts = new Map(
      [undefined, ...deviceGroups, ...presenceGroups].map((group) => [
        group ?? '',
        db.prepare<[string, number], StatusItem>(compatSql.byStatusAfter(group)),
      ]),
    );
    this.devicesAfterStmt = db.prepare(compatSql.devicesAfter);
    this.eventsOfMacStmt = db.prepare(compatSql.eventsOfMac);
    this.eventsOfAllStmt = db.prepare(compatSql.eventsOfAll);
    this.sessionTotalsStmt = db.prepare<[{ start: string }], number[]>(compatSql.sessionTotals).raw();
    this.existsStmt = db.prepare(deviceSql.exists);
    this.insertStmt = db.prepare(deviceSql.insert);
    this.importTx = db.transaction((devices: readonly ImportedDevice[], now: string) => {
      const inserted: string[] = [];
      const updated: string[] = [];
      for (const device of devices) {
        // A CSV import writes devName through the API: a name it gives is the user's.
        const changes = withNameSource(device.changes, 'user');
        if (this.existsStmt.get(device.mac) === undefined) {
          const row = newDeviceRow(device.mac, {
            devFirstConnection: now,
            devLastConnection: now,
            ...changes,
          });
          if (device.guid !== undefined) row.devGUID = device.guid;
          this.insertStmt.run(row);
          inserted.push(device.mac);
        } else {
          this.update(device.mac, changes);
          updated.push(device.mac);
        }
      }
      return { inserted, updated };
    });
  }

  byStatusAfter(group: ByStatusGroup | undefined, afterMac: string, limit: number): Promise<StatusItem[]> {
    return settled(() => {
      const statement = this.byStatusStmts.get(group ?? '');
      if (statement === undefined) throw new RangeError(`unknown group '${String(group)}'`);
      return statement.all(afterMac, limit);
    });
  }

  devicesAfter(afterMac: string, limit: number): Promise<DeviceRow[]> {
    return settled(() => {
      return this.devicesAfterStmt.all(afterMac, limit);
    });
  }

  eventsAfter(
    mac: string | undefined,
    cursor: EventCursor | undefined,
    limit: number,
  ): Promise<{ events: CompatEvent[]; next: EventCursor | undefined }> {
    return settled(() => {
      const params = { ...(cursor ?? topCursor), limit, ...(mac === undefined ? {} : { mac }) };
      return eventPage(
        mac === undefined ? this.eventsOfAllStmt.all(params) : this.eventsOfMacStmt.all(params),
        limit,
      );
    });
  }

  sessionTotals(start: Date | null): Promise<SessionTotals> {
    return settled(() => {
      const row = this.sessionTotalsStmt.get({ start: start === null ? '' : dbTime(start) }) ?? [];
      return [0, 1, 2, 3, 4, 5].map((i) => row[i] ?? 0) as SessionTotals;
    });
  }

  importDevices(
    devices: readonly ImportedDevice[],
    now: Date,
  ): Promise<{ inserted: string[]; updated: string[] }> {
    return this.core.write(() => this.importTx(devices, dbTime(now)));
  }

  /** One device's given columns (catalogue names only: they come from ImportedDevice.changes). */
  private update(mac: string, changes: DeviceChanges): void {
    const names = Object.keys(changes);
    if (names.length === 0) return;
    // One statement per column set, kept: a CSV names the same columns on every row.
    const key = names.join(',');
    let statement = this.updateStmts.get(key);
    if (statement === undefined) {
      if (this.updateStmts.size >= 64) this.updateStmts.clear();
      statement = this.db.prepare(
        `UPDATE Devices SET ${names.map((n) => `${n} = @${n}`).join(', ')} WHERE devMac = @mac`,
      );
      this.updateStmts.set(key, statement);
    }
    statement.run({ ...changes, mac });
  }
}
