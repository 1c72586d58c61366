/**
 * The security watch's part of the store on PostgreSQL (`WatchStore`, ../watch.ts): DevicePorts
 * and WatchMemory, with the SQLite watch store's meaning. A round of port scans is one
 * transaction: each scanned device's ports replaced (a device deleted meanwhile left out), then
 * the events the caller's pure plan makes of the changes, written like a scan cycle's with their
 * notifications.
 */
import type { PlannedEvent } from '../../devices/presence.js';
import { dbTime, fromDbTime } from '../../time.js';
import { openPort, portChanges, type PortRow } from '../sqlite/watch.js';
import type { MemoryKind, PortDiff, PortEvents, PortScan, StoredPort, WatchStore } from '../watch.js';
import type { PostgresPool } from './pool.js';
import { remember, type PostgresPresenceStore } from './presence.js';

const portColumns = `"dpo_Port", "dpo_Protocol", "dpo_Service", "dpo_Product", "dpo_Version", "dpo_FirstSeen", "dpo_LastSeen"`;

export class PostgresWatchStore implements WatchStore {
  /** @param presence writes the events of a round of scans (and their notifications) */
  constructor(
    private readonly store: PostgresPool,
    private readonly presence: Pick<PostgresPresenceStore, 'applyOn'>,
  ) {}

  async deviceExists(mac: string): Promise<boolean> {
    return (await this.store.query('SELECT 1 FROM "Devices" WHERE "devMac" = $1', [mac])).length > 0;
  }

  async deviceAt(ip: string): Promise<string | undefined> {
    const rows = await this.store.query<{ devMac: string }>(
      `SELECT "devMac" FROM "Devices" WHERE "devLastIP" = $1 OR "devPrimaryIPv6" = $1
       ORDER BY "devPresentLastScan" DESC, "devLastConnection" DESC NULLS LAST, "devMac" LIMIT 1`,
      [ip],
    );
    return rows[0]?.devMac;
  }

  async watchedDevices(): Promise<{ mac: string; ip: string }[]> {
    return (
      await this.store.query<{ mac: string; ip: string }>(
        `SELECT "devMac" AS mac, "devLastIP" AS ip FROM "Devices"
         WHERE "devWatchPorts" = 1 AND "devPresentLastScan" = 1 ORDER BY "devMac"`,
      )
    ).map((row) => ({ mac: row.mac, ip: row.ip }));
  }

  async memory(kind: MemoryKind): Promise<Map<string, string>> {
    const rows = await this.store.query<{ wat_Key: string; wat_Value: string }>(
      'SELECT "wat_Key", "wat_Value" FROM "WatchMemory" WHERE "wat_Kind" = $1',
      [kind],
    );
    return new Map(rows.map((row) => [row.wat_Key, row.wat_Value]));
  }

  async ports(mac: string): Promise<{ scannedAt: string | null; ports: StoredPort[] }> {
    return this.store.transaction(async (client) => {
      const scanned = await client.query<{ wat_Value: string }>(
        `SELECT "wat_Value" FROM "WatchMemory" WHERE "wat_Kind" = 'ports-scanned' AND "wat_Key" = $1`,
        [mac],
      );
      const rows = await client.query<PortRow & Record<string, unknown>>(
        `SELECT ${portColumns} FROM "DevicePorts" WHERE "dpo_MAC" = $1 ORDER BY "dpo_Protocol", "dpo_Port"`,
        [mac],
      );
      const at = scanned.rows[0]?.wat_Value;
      return {
        scannedAt: at === undefined ? null : fromDbTime(at),
        ports: rows.rows.map((row) => ({
          ...openPort(row),
          firstSeen: fromDbTime(row.dpo_FirstSeen),
          lastSeen: fromDbTime(row.dpo_LastSeen),
        })),
      };
    }, 'snapshot');
  }

  async recordPortScans(
    scans: readonly PortScan[],
    now: Date,
    plan: (diffs: ReadonlyMap<string, PortDiff>) => PortEvents,
  ): Promise<readonly PlannedEvent[]> {
    const time = dbTime(now);
    return this.store.transaction(async (client) => {
      const diffs = new Map<string, PortDiff>();
      for (const { mac, ports } of scans) {
        // The device row is locked for the round: a delete waits, or has happened (left out).
        const exists = await client.query('SELECT 1 FROM "Devices" WHERE "devMac" = $1 FOR UPDATE', [mac]);
        if (exists.rows.length === 0) continue;
        const scanned = await client.query(
          `SELECT 1 FROM "WatchMemory" WHERE "wat_Kind" = 'ports-scanned' AND "wat_Key" = $1`,
          [mac],
        );
        const before = await client.query<PortRow & Record<string, unknown>>(
          `SELECT ${portColumns} FROM "DevicePorts" WHERE "dpo_MAC" = $1 ORDER BY "dpo_Protocol", "dpo_Port"`,
          [mac],
        );
        const { opened, closed, open } = portChanges(before.rows.map(openPort), ports);
        for (const p of closed) {
          await client.query(
            'DELETE FROM "DevicePorts" WHERE "dpo_MAC" = $1 AND "dpo_Port" = $2 AND "dpo_Protocol" = $3',
            [mac, p.port, p.protocol],
          );
        }
        for (const p of open) {
          await client.query(
            `INSERT INTO "DevicePorts" ("dpo_MAC", ${portColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
             ON CONFLICT ("dpo_MAC", "dpo_Port", "dpo_Protocol") DO UPDATE SET "dpo_Service" = excluded."dpo_Service",
               "dpo_Product" = excluded."dpo_Product", "dpo_Version" = excluded."dpo_Version",
               "dpo_LastSeen" = excluded."dpo_LastSeen"`,
            [mac, p.port, p.protocol, p.service, p.product, p.version, time],
          );
        }
        await remember(client, 'ports-scanned', mac, time);
        diffs.set(mac, { hadPreviousScan: scanned.rows.length > 0, opened, closed });
      }
      const { events, notify } = plan(diffs);
      if (events.length > 0) {
        await this.presence.applyOn(
          client,
          { newDevices: [], updates: [], events, openSessions: [], closeSessions: [], scanState: [] },
          { notify },
        );
      }
      return events;
    });
  }
}
