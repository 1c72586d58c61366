/**
 * The event log across every device on PostgreSQL (`EventLogStore`, ../event-log.ts): events newest
 * first (time, then rowid), narrowed by type and time, paged, each with its device's name; the page
 * and its total from one snapshot.
 */
import type { QueryResultRow } from 'pg';
import { eventColumns, eventToJson, type EventRow } from '../../devices/history.js';
import { dbTime } from '../../time.js';
import type { Page, PageResult } from '../devices.js';
import type { EventLogFilter, EventLogItem, EventLogStore } from '../event-log.js';
import { endOfTime } from '../sqlite/event-log.js';
import type { PostgresPool } from './pool.js';

// $3: the types, or NULL for every type.
const where = `e."eve_DateTime" >= $1 AND e."eve_DateTime" <= $2 AND ($3::text[] IS NULL OR e."eve_EventType" = ANY($3))`;

export class PostgresEventLog implements EventLogStore {
  constructor(private readonly store: PostgresPool) {}

  async list(filter: EventLogFilter, page: Page): Promise<PageResult<EventLogItem>> {
    const types = filter.types ?? [];
    const params = [
      filter.since === undefined ? '' : dbTime(filter.since),
      filter.until === undefined ? endOfTime : dbTime(filter.until),
      types.length > 0 ? [...types] : null,
    ];
    return this.store.transaction(async (client) => {
      const rows = await client.query<EventRow & { devName: string | null } & QueryResultRow>(
        `SELECT ${eventColumns.map((c) => `e."${c}"`).join(', ')}, d."devName" AS "devName"
         FROM "Events" e LEFT JOIN "Devices" d ON d."devMac" = e."eve_MAC"
         WHERE ${where}
         ORDER BY e."eve_DateTime" DESC, e."rowid" DESC LIMIT $4 OFFSET $5`,
        [...params, page.limit, page.offset],
      );
      const total = await client.query<{ n: number }>(
        `SELECT count(*)::bigint AS n FROM "Events" e WHERE ${where}`,
        params,
      );
      return {
        items: rows.rows.map(({ devName, ...row }) => ({ ...eventToJson(row), devName: devName ?? null })),
        total: total.rows[0]?.n ?? 0,
      };
    }, 'snapshot');
  }
}
