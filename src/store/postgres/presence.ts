/**
 * The scanner's part of the store on PostgreSQL (`PresenceStore`, ../presence.ts):
 * every device's presence state in one read, a scan cycle's writes in one transaction, history
 * retention in batches. The writes are set-based: each kind of row of a cycle (new devices, the
 * updates, the sessions closed and opened, the events, the scanner's memory) is one statement over
 * a JSON array, in the order the SQLite store writes them, so a cycle of thousands of devices is a
 * handful of round trips, and the count triggers see each kind as one batch.
 */
import type { PoolClient } from 'pg';
import { jsonToColumns } from '../../devices/catalogue.js';
import {
  toggleEventTypes,
  type KnownDevice,
  type NameUpdate,
  type PresenceChanges,
} from '../../devices/presence.js';
import { dbTime } from '../../time.js';
import type { PruneResult } from '../devices.js';
import type { PresenceExtras, PresenceStore } from '../presence.js';
import type { MemoryKind } from '../watch.js';
import { knownDeviceOf, type StateRow } from '../sqlite/presence.js';
import { newDeviceRow } from '../sqlite/rows.js';
import type { PostgresOutboxStore } from './outbox.js';
import type { PostgresPool } from './pool.js';
import type { PostgresProbeStore } from './probes.js';

const time = (date: Date | null): string | null => (date === null ? null : dbTime(date));

/**
 * Stores automatic names on `client`: never over a user or import name (checked in the statement
 * itself, so a name written a moment ago by a person wins).
 */
export async function writeNames(
  client: Pick<PoolClient, 'query'>,
  names: readonly NameUpdate[],
): Promise<void> {
  if (names.length === 0) return;
  await client.query(
    `UPDATE "Devices" AS d SET
       "devName" = coalesce(n.name, d."devName"),
       "devNameSource" = CASE WHEN n.name IS NULL THEN d."devNameSource" ELSE n.source END,
       "devFQDN" = coalesce(n.fqdn, d."devFQDN")
     FROM json_to_recordset($1::json) AS n (mac text, name text, source text, fqdn text)
     WHERE d."devMac" = n.mac AND (n.name IS NULL OR d."devNameSource" NOT IN ('user', 'import'))`,
    [JSON.stringify(names)],
  );
}

/** Sets (value given) or forgets (undefined) one key of the watch's memory, on `client`. */
export async function remember(
  client: Pick<PoolClient, 'query'>,
  kind: MemoryKind,
  key: string,
  value: string | undefined,
): Promise<void> {
  await client.query(
    value === undefined
      ? 'DELETE FROM "WatchMemory" WHERE "wat_Kind" = $1 AND "wat_Key" = $2'
      : `INSERT INTO "WatchMemory" ("wat_Kind", "wat_Key", "wat_Value") VALUES ($1, $2, $3)
         ON CONFLICT ("wat_Kind", "wat_Key") DO UPDATE SET "wat_Value" = excluded."wat_Value"`,
    value === undefined ? [kind, key] : [kind, key, value],
  );
}

export class PostgresPresenceStore implements PresenceStore {
  /**
   * @param outbox where a cycle's notifications (extras.notify) are written, in its transaction
   * @param probes where a probe's cycle (extras.probeCycle) is recorded, in its transaction
   */
  constructor(
    private readonly store: PostgresPool,
    private readonly outbox?: Pick<PostgresOutboxStore, 'writeRequested'>,
    private readonly probes?: Pick<PostgresProbeStore, 'recordCycleOn'>,
  ) {}

  /**
   * Every device's presence state; with `toggleSince`, each device's events that count towards
   * flapping since then (one read of the window, not a query per device).
   */
  loadPresence(toggleSince: Date | null = null): Promise<Map<string, KnownDevice>> {
    return this.presenceOf('', [], toggleSince);
  }

  loadSitePresence(
    site: string | null,
    macs: readonly string[],
    toggleSince: Date | null = null,
  ): Promise<Map<string, KnownDevice>> {
    return this.presenceOf(
      `WHERE d."devSite" = $1 OR d."devMac" = ANY($2::text[])`,
      [site, [...macs]],
      toggleSince,
    );
  }

  /** The presence state of the devices `where` selects (SQLite's presenceOf, in one snapshot each). */
  private async presenceOf(
    where: string,
    params: readonly unknown[],
    toggleSince: Date | null,
  ): Promise<Map<string, KnownDevice>> {
    const toggles = new Map<string, number>();
    if (toggleSince !== null) {
      const rows = await this.store.query<{ mac: string; toggles: number }>(
        `SELECT "eve_MAC" AS mac, count(*)::bigint AS toggles FROM "Events"
         WHERE "eve_DateTime" > $1 AND "eve_EventType" = ANY($2::text[]) GROUP BY "eve_MAC"`,
        [dbTime(toggleSince), [...toggleEventTypes]],
      );
      for (const row of rows) toggles.set(row.mac, row.toggles);
    }
    const rows = await this.store.query<StateRow & Record<string, unknown>>(
      `SELECT d."devMac", d."devPresentLastScan", d."devAlertDown", d."devAlertEvents", d."devScan",
         d."devIsArchived", d."devLastIP", d."devPrimaryIPv6", d."devVendor", d."devCanSleep", d."devLastConnection",
         d."devMissesBeforeAbsent", d."devSite", coalesce(s."misses", 0) AS "misses", s."lastAbsence",
         coalesce(s."flapping", 0) AS "flapping"
       FROM "Devices" d LEFT JOIN "ScanState" s ON s."mac" = d."devMac" ${where}`,
      [...params],
    );
    const known = new Map<string, KnownDevice>();
    for (const row of rows) known.set(row.devMac, knownDeviceOf(row, toggles.get(row.devMac) ?? 0));
    return known;
  }

  /**
   * Applies one scan cycle and its extras (the watch memory, the notifications) in one
   * transaction: all of it or, on any error, none of it.
   */
  async applyPresence(changes: PresenceChanges, extras: PresenceExtras = {}): Promise<void> {
    await this.store.transaction(async (client) => {
      await this.applyOn(client, changes, extras);
    });
  }

  /** applyPresence's writes on `client`, inside the caller's transaction (the port watch's too). */
  async applyOn(client: PoolClient, changes: PresenceChanges, extras: PresenceExtras = {}): Promise<void> {
    await this.writePresence(client, changes);
    for (const { kind, key, value } of extras.memory ?? []) await remember(client, kind, key, value);
    const requests = [...(extras.notify === undefined ? [] : [extras.notify]), ...(extras.notices ?? [])];
    for (const request of requests) {
      if (this.outbox === undefined) throw new Error('a cycle with notifications needs the outbox');
      await this.outbox.writeRequested(request, client);
    }
    if (extras.probeCycle !== undefined) {
      // Said, not skipped: a probe's cycle without its bookkeeping would be applied again.
      if (this.probes === undefined) throw new Error("a probe's cycle needs the probe store");
      await this.probes.recordCycleOn(client, extras.probeCycle);
    }
    extras.testOnlyBeforeCommit?.();
  }

  private async writePresence(client: PoolClient, changes: PresenceChanges): Promise<void> {
    const run = async (sql: string, rows: readonly unknown[]): Promise<void> => {
      if (rows.length > 0) await client.query(sql, [JSON.stringify(rows)]);
    };
    await run(
      `INSERT INTO "Devices" SELECT * FROM json_populate_recordset(NULL::"Devices", $1::json)`,
      changes.newDevices.map((device) => newDeviceRow(device.devMac, jsonToColumns(device))),
    );
    await run(
      `INSERT INTO "DeviceMacs" ("dma_MAC", "dma_DevMac", "dma_FirstSeen", "dma_LastSeen", "dma_Reason")
       SELECT l.mac, l."devMac", l.at, l.at, l.reason
       FROM json_to_recordset($1::json) AS l (mac text, "devMac" text, at text, reason text)`,
      (changes.links ?? []).map((l) => ({
        mac: l.mac,
        devMac: l.devMac,
        at: dbTime(l.dateTime),
        reason: l.reason,
      })),
    );
    await run(
      `UPDATE "DeviceMacs" AS m SET "dma_LastSeen" = a.at
       FROM json_to_recordset($1::json) AS a (mac text, at text) WHERE m."dma_MAC" = a.mac`,
      (changes.aliasesSeen ?? []).map((a) => ({ mac: a.mac, at: dbTime(a.dateTime) })),
    );
    await run(
      `UPDATE "Devices" AS d SET "devPresentLastScan" = u.present, "devLastIP" = u.ip,
         "devLastConnection" = coalesce(u.seen, d."devLastConnection"), "devVendor" = coalesce(u.vendor, d."devVendor"),
         "devPrimaryIPv6" = coalesce(u.ipv6, d."devPrimaryIPv6")
       FROM json_to_recordset($1::json) AS u (mac text, present bigint, ip text, seen text, vendor text, ipv6 text)
       WHERE d."devMac" = u.mac`,
      changes.updates.map((u) => ({
        mac: u.mac,
        present: u.presentLastScan,
        ip: u.lastIP,
        seen: time(u.lastConnection),
        vendor: u.vendor,
        ipv6: u.primaryIPv6,
      })),
    );
    // Where each device was seen last: its site and the probe ('' for the hub's own cycles).
    await run(
      `UPDATE "Devices" AS d SET "devSite" = m.site, "devSyncHubNode" = m.node
       FROM json_to_recordset($1::json) AS m (mac text, site text, node text)
       WHERE d."devMac" = m.mac AND NOT (d."devSite" = m.site AND d."devSyncHubNode" = m.node)`,
      changes.sites ?? [],
    );
    // Close before open: a device never has two open sessions within one cycle.
    await run(
      `UPDATE "Sessions" AS s SET "ses_EventTypeDisconnection" = c.type, "ses_DateTimeDisconnection" = c.at,
         "ses_StillConnected" = 0
       FROM json_to_recordset($1::json) AS c (mac text, type text, at text)
       WHERE s."ses_MAC" = c.mac AND s."ses_StillConnected" = 1`,
      changes.closeSessions.map((c) => ({ mac: c.mac, type: c.eventType, at: dbTime(c.dateTime) })),
    );
    // Rows are numbered in the plan's order (their rowid order, which the lists page by).
    await run(
      `INSERT INTO "Sessions" ("ses_MAC", "ses_IP", "ses_EventTypeConnection", "ses_DateTimeConnection",
         "ses_EventTypeDisconnection", "ses_DateTimeDisconnection", "ses_StillConnected", "ses_AdditionalInfo")
       SELECT o.mac, o.ip, o.type, o.at, '', NULL, 1, ''
       FROM ROWS FROM (json_to_recordset($1::json) AS (mac text, ip text, type text, at text))
         WITH ORDINALITY AS o (mac, ip, type, at, n)
       ORDER BY o.n`,
      changes.openSessions.map((o) => ({ mac: o.mac, ip: o.ip, type: o.eventType, at: dbTime(o.dateTime) })),
    );
    await run(
      `INSERT INTO "Events" ("eve_MAC", "eve_IP", "eve_DateTime", "eve_EventType", "eve_AdditionalInfo",
         "eve_PendingAlertEmail", "eve_PairEventRowid")
       SELECT e.mac, e.ip, e.at, e.type, e.info, e.pending, NULL
       FROM ROWS FROM (json_to_recordset($1::json) AS (mac text, ip text, at text, type text, info text, pending bigint))
         WITH ORDINALITY AS e (mac, ip, at, type, info, pending, n)
       ORDER BY e.n`,
      changes.events.map((e) => ({
        mac: e.mac,
        ip: e.ip,
        at: dbTime(e.dateTime),
        type: e.type,
        info: e.additionalInfo,
        pending: e.pendingAlert,
      })),
    );
    await run(
      `INSERT INTO "ScanState" ("mac", "misses", "lastAbsence", "flapping")
       SELECT s.mac, s.misses, s."lastAbsence", s.flapping
       FROM json_to_recordset($1::json) AS s (mac text, misses bigint, "lastAbsence" text, flapping bigint)
       ON CONFLICT ("mac") DO UPDATE SET "misses" = excluded."misses", "lastAbsence" = excluded."lastAbsence",
         "flapping" = excluded."flapping"`,
      changes.scanState,
    );
    await writeNames(client, changes.names ?? []);
  }

  /**
   * Deletes up to `limit` events, and up to `limit` closed sessions, older than `before`; open
   * sessions are kept whatever their age.
   */
  async pruneHistory(before: Date, limit: number): Promise<PruneResult> {
    const cutoff = dbTime(before);
    const events = await this.store.query<{ n: number }>(
      `WITH gone AS (DELETE FROM "Events" WHERE "rowid" IN (
         SELECT "rowid" FROM "Events" WHERE "eve_DateTime" < $1 LIMIT $2) RETURNING 1)
       SELECT count(*)::bigint AS n FROM gone`,
      [cutoff, limit],
    );
    const sessions = await this.store.query<{ n: number }>(
      `WITH gone AS (DELETE FROM "Sessions" WHERE "rowid" IN (
         SELECT "rowid" FROM "Sessions" WHERE "ses_DateTimeDisconnection" < $1 AND "ses_StillConnected" = 0 LIMIT $2)
         RETURNING 1)
       SELECT count(*)::bigint AS n FROM gone`,
      [cutoff, limit],
    );
    return { events: events[0]?.n ?? 0, sessions: sessions[0]?.n ?? 0 };
  }

  /** Drops the scanner's memory (and the aliases) of MACs that are no longer devices. */
  async pruneScanMemory(): Promise<void> {
    await this.store.transaction(async (client) => {
      await client.query(
        `DELETE FROM "ScanState" s WHERE NOT EXISTS (SELECT 1 FROM "Devices" WHERE "devMac" = s."mac")`,
      );
      await client.query(
        `DELETE FROM "DeviceMacs" m WHERE NOT EXISTS (SELECT 1 FROM "Devices" WHERE "devMac" = m."dma_DevMac")`,
      );
    });
  }
}
