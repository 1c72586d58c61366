/**
 * A device's history lists on PostgreSQL (`DeviceStore.listEvents` / `listSessions`, ../devices.ts,
 * made async): the same rows, order and totals as the SQLite store, read in one snapshot
 * (REPEATABLE READ) so that a page and its total agree. SQLite sorts NULL first, so a descending
 * order puts a session with no connection time last there: NULLS LAST says so here.
 */
import type { PoolClient, QueryResultRow } from 'pg';
import { eventColumns, eventToJson, sessionColumns, sessionToJson } from '../../devices/history.js';
import type { EventJson, EventRow, SessionJson, SessionRow } from '../../devices/history.js';
import { periodStart, type Period } from '../../time.js';
import type { Page, PageResult } from '../devices.js';
import type { PostgresPool } from './pool.js';

const quoted = (columns: readonly string[]): string => columns.map((c) => `"${c}"`).join(', ');
const eventInPeriod = '"eve_MAC" = $1 AND "eve_DateTime" >= $2';
const sessionInPeriod = `"ses_MAC" = $1
  AND ("ses_DateTimeDisconnection" IS NULL OR "ses_StillConnected" = 1 OR "ses_DateTimeDisconnection" > $2)`;
const eventsPage = `SELECT ${quoted(eventColumns)} FROM "Events" WHERE ${eventInPeriod}
  ORDER BY "eve_DateTime" DESC, "eve_EventType" DESC, "rowid" DESC LIMIT $3 OFFSET $4`;
const sessionsPage = `SELECT ${quoted(sessionColumns)} FROM "Sessions" WHERE ${sessionInPeriod}
  ORDER BY "ses_DateTimeConnection" DESC NULLS LAST, "rowid" DESC LIMIT $3 OFFSET $4`;

export class PostgresHistoryStore {
  constructor(private readonly store: PostgresPool) {}

  /** The device's events at or after the period start, newest first; undefined for no device. */
  async listEvents(
    mac: string,
    period: Period,
    now: Date,
    page: Page,
  ): Promise<PageResult<EventJson> | undefined> {
    return this.page(mac, period, now, 'Events', async (client, params) =>
      (
        await client.query<EventRow & QueryResultRow>(eventsPage, [...params, page.limit, page.offset])
      ).rows.map(eventToJson),
    );
  }

  /** The device's sessions that overlap the period, newest connection first; undefined for no device. */
  async listSessions(
    mac: string,
    period: Period,
    now: Date,
    page: Page,
  ): Promise<PageResult<SessionJson> | undefined> {
    return this.page(mac, period, now, 'Sessions', async (client, params) =>
      (
        await client.query<SessionRow & QueryResultRow>(sessionsPage, [...params, page.limit, page.offset])
      ).rows.map(sessionToJson),
    );
  }

  /** The page `read` gives and the total of its table's rows in the period, in one snapshot. */
  private async page<J>(
    mac: string,
    period: Period,
    now: Date,
    table: 'Events' | 'Sessions',
    read: (client: PoolClient, params: readonly [string, string]) => Promise<J[]>,
  ): Promise<PageResult<J> | undefined> {
    const params = [mac, periodStart(period, now) ?? ''] as const;
    return this.store.transaction(async (client) => {
      const exists = await client.query('SELECT 1 FROM "Devices" WHERE "devMac" = $1', [mac]);
      if (exists.rows.length === 0) return undefined;
      const items = await read(client, params);
      const total = await client.query<{ n: number }>(
        `SELECT count(*)::bigint AS n FROM "${table}" WHERE ${table === 'Events' ? eventInPeriod : sessionInPeriod}`,
        [...params],
      );
      return { items, total: total.rows[0]?.n ?? 0 };
    }, 'snapshot');
  }
}
