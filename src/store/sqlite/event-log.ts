/**
 * The event log across every device (the console's events page): events newest first, narrowed by
 * type and time, paged, each with the name of its device. Both statements are prepared once. The
 * type filter is one statement for any set of types: the chosen types fill six parameters, repeated
 * when fewer are chosen.
 */
import type { Database, Statement } from 'better-sqlite3';
import { eventColumns, eventToJson, eventTypes, type EventRow } from '../../devices/history.js';
import type { Page, PageResult } from '../devices.js';
import type { EventLogFilter, EventLogItem, EventLogStore } from '../event-log.js';
import { dbTime } from '../../time.js';
import { settled } from './device-store.js';

const typeSlots = eventTypes.map((_, i) => `@t${i}`).join(', ');
const inRange = 'eve_DateTime >= @since AND eve_DateTime <= @until';

/** Every SQL text of the log, exported so that a test can check their query plans. */
export const eventLogSql = {
  // Newest first along Events_time (time, then rowid, both descending): a backward index walk that
  // stops after one page, also when a type filter skips rows. Left to itself, SQLite would pick
  // Events_type_time for a type filter and sort every matching event (1 s for 160,000 of them).
  // The inner query picks the page's rowids, so rows skipped by OFFSET are never joined.
  page: (typed: boolean) => `SELECT ${eventColumns.map((c) => `e.${c}`).join(', ')}, d.devName AS devName
    FROM (SELECT rowid AS id FROM Events INDEXED BY Events_time
          WHERE ${inRange}${typed ? ` AND eve_EventType IN (${typeSlots})` : ''}
          ORDER BY eve_DateTime DESC, rowid DESC LIMIT @limit OFFSET @offset) AS page
    JOIN Events AS e ON e.rowid = page.id
    LEFT JOIN Devices AS d ON d.devMac = e.eve_MAC
    ORDER BY e.eve_DateTime DESC, e.rowid DESC`,
  // The count reads only the index: Events_type_time with a type filter, Events_time without.
  total: (typed: boolean) =>
    `SELECT COUNT(*) FROM Events WHERE ${inRange}${typed ? ` AND eve_EventType IN (${typeSlots})` : ''}`,
} as const;

type Params = Record<string, string | number>;

/** Later than any stored time: the default upper bound. */
export const endOfTime = '9999-12-31 23:59:59';

export class SqliteEventLog implements EventLogStore {
  private readonly pageStmts: ReadonlyMap<
    boolean,
    Statement<[Params], EventRow & { devName: string | null }>
  >;
  private readonly totalStmts: ReadonlyMap<boolean, Statement<[Params], number>>;
  private readonly readTx: <T>(read: () => T) => T;

  constructor(db: Database) {
    this.pageStmts = new Map([false, true].map((typed) => [typed, db.prepare(eventLogSql.page(typed))]));
    this.totalStmts = new Map(
      [false, true].map((typed) => [typed, db.prepare<[Params], number>(eventLogSql.total(typed)).pluck()]),
    );
    const read = db.transaction((fn: () => unknown) => fn());
    this.readTx = <T>(fn: () => T): T => read(fn) as T;
  }

  list(filter: EventLogFilter, page: Page): Promise<PageResult<EventLogItem>> {
    return settled(() => {
      const types = filter.types ?? [];
      const typed = types.length > 0;
      const params: Params = {
        since: filter.since === undefined ? '' : dbTime(filter.since),
        until: filter.until === undefined ? endOfTime : dbTime(filter.until),
      };
      if (typed) eventTypes.forEach((_, i) => (params[`t${i}`] = types[i % types.length] as string));
      const pageStmt = this.pageStmts.get(typed);
      const totalStmt = this.totalStmts.get(typed);
      if (pageStmt === undefined || totalStmt === undefined) throw new Error('statements not prepared');
      return this.readTx(() => ({
        items: pageStmt
          .all({ ...params, ...page })
          .map(({ devName, ...row }) => ({ ...eventToJson(row), devName: devName ?? null })),
        total: totalStmt.get(params) ?? 0,
      }));
    });
  }
}
