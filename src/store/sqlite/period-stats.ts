/**
 * The period-statistics engine: a device's counts for a period (devSessions, devEvents,
 * devDownAlerts, devPresenceHours) and how they follow the clock (TimedView), read from the rows
 * the count triggers keep (see `countSql`), not recounted. A device with irregular history rows
 * (times that are not canonical storage text) is recounted from the raw rows for periods other
 * than `all`, with the statements that define the counts. The arithmetic over those rows
 * (`keptPeriodStats`, `recountedPeriodStats`) is exported: the PostgreSQL store reads the same rows
 * (postgres/device-views.ts) and gives them to the same functions.
 */
import type { Database, Statement } from 'better-sqlite3';
import { dbTime, fromDbTime, periodStart, periods, type Period } from '../../time.js';
import { presenceHours, type DeviceStats } from '../devices.js';
import { countSql, deviceSql } from './device-sql.js';

/** A device's row of DeviceHistoryTotals (`countSql.kept`; no row: zeros). */
export interface TotalsRow {
  events: number;
  downAlerts: number;
  sessions: number;
  closedSeconds: number;
  irregular: number;
}

/** A device's open sessions (the `open*` columns of `countSql.kept`). */
export interface OpenRow {
  sessions: number;
  seconds: number;
  growing: number;
  nextStart: string | null;
  irregular: number;
}

/** `countSql.kept`: the totals, then the open sessions' columns. */
interface KeptRow extends TotalsRow {
  openSessions: number;
  openSeconds: number;
  openGrowing: number;
  openNextStart: string | null;
  openIrregular: number;
}

/** The earliest row times at or after a period's start (`countSql.nextChange`). */
export interface NextChangeRow {
  event: string | null;
  ended: string | null;
  started: string | null;
}

/** The buckets from the day after the period start's day on (`countSql.buckets`). */
export interface BucketsRow {
  events: number;
  downAlerts: number;
  ended: number;
  endedSum: number;
  started: number;
  startedSum: number;
}

/** Events counted (`countSql.edgeEvents`, `deviceSql.eventCounts`). */
export interface EventCountsRow {
  events: number;
  downAlerts: number;
}

/** A count of closed sessions and the sum of one of their times in Unix seconds (`countSql.edge*`). */
export interface EdgeSessionsRow {
  n: number;
  sum: number;
}

/** The rows of a period other than `all`, besides the totals and the open sessions. */
export interface PeriodWindowRows {
  readonly buckets: BucketsRow | undefined;
  readonly edgeEvents: EventCountsRow | undefined;
  readonly ended: EdgeSessionsRow | undefined;
  readonly started: EdgeSessionsRow | undefined;
  readonly next: NextChangeRow | undefined;
}

interface EdgeParams {
  mac: string;
  start: string;
  dayFrom: string;
}

/** Period statistics with how they follow the clock (see TimedView). */
export interface PeriodStats {
  readonly stats: DeviceStats;
  readonly seconds: number;
  readonly slope: number;
  /** Unix milliseconds; null: until a write. */
  readonly until: number | null;
}

export const noTotals: TotalsRow = { events: 0, downAlerts: 0, sessions: 0, closedSeconds: 0, irregular: 0 };
export const noOpen: OpenRow = { sessions: 0, seconds: 0, growing: 0, nextStart: null, irregular: 0 };

/** Storage text as Unix milliseconds (NaN when it is not a time). */
const textMs = (text: string): number => Date.parse(fromDbTime(text));

/**
 * Where the buckets take over from the raw rows, for a period starting at `start` (storage text):
 * the day after the start's day (`dayFrom`), then whole months from the month after that day's
 * (`monthFrom`, whose first day is `dayTo`).
 */
export function bucketBounds(start: string): { dayFrom: string; dayTo: string; monthFrom: string } {
  const day = new Date(`${start.slice(0, 10)}T00:00:00Z`);
  day.setUTCDate(day.getUTCDate() + 1);
  const dayFrom = day.toISOString().slice(0, 10);
  const month = new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth() + 1, 1));
  const monthFrom = month.toISOString().slice(0, 7);
  return { dayFrom, dayTo: `${monthFrom}-01`, monthFrom };
}

/**
 * The counts of one period from the kept rows: the totals and open sessions, and for a period
 * other than `all` its window rows (buckets, the start's day read raw, the next changes). `start`
 * is the period start as storage text ('' for `all`).
 */
export function keptPeriodStats(
  period: Period,
  now: Date,
  start: string,
  totals: TotalsRow,
  open: OpenRow,
  window: PeriodWindowRows | undefined,
): PeriodStats {
  let events = totals.events;
  let downAlerts = totals.downAlerts;
  let sessions = totals.sessions;
  let seconds = totals.closedSeconds + open.seconds;
  let slope = open.growing;
  // When the answer stops following the clock alone: a future open session starts, or (for a
  // period) the moving start passes the next event or session boundary.
  const changes: number[] = [];
  if (open.nextStart !== null) changes.push(textMs(open.nextStart));
  if (open.irregular > 0) changes.push(now.getTime());
  const length = periods[period];
  if (length !== null && window !== undefined) {
    // Closed sessions that end after the start: those ending on later days are in the buckets
    // by their end, those ending on the start's day are read raw. Their connected seconds within
    // the period are sum(end) - sum(max(start of session, period start)); the sessions that
    // started at or after the period start are likewise in the buckets by their start.
    const { buckets, edgeEvents, ended, started, next } = window;
    const endedCount = (buckets?.ended ?? 0) + (ended?.n ?? 0);
    const endedSum = (buckets?.endedSum ?? 0) + (ended?.sum ?? 0);
    const startedCount = (buckets?.started ?? 0) + (started?.n ?? 0);
    const startedSum = (buckets?.startedSum ?? 0) + (started?.sum ?? 0);
    const startSeconds = textMs(start) / 1000;
    events = (buckets?.events ?? 0) + (edgeEvents?.events ?? 0);
    downAlerts = (buckets?.downAlerts ?? 0) + (edgeEvents?.downAlerts ?? 0);
    sessions = endedCount + open.sessions;
    seconds = endedSum - startedSum - startSeconds * (endedCount - startedCount) + open.seconds;
    // Each closed session that straddles the start loses a second per second as it moves.
    slope -= endedCount - startedCount;
    for (const text of [next?.event, next?.ended, next?.started])
      if (text !== null && text !== undefined) changes.push(textMs(text) + length * 86_400_000);
  }
  return {
    stats: {
      devSessions: sessions,
      devEvents: events,
      devDownAlerts: downAlerts,
      devPresenceHours: presenceHours(seconds),
    },
    seconds,
    slope,
    until: earliest(changes, now),
  };
}

/** The counts recounted from the raw rows (`deviceSql.eventCounts`, `sessionStats`): not cacheable. */
export function recountedPeriodStats(
  events: EventCountsRow | undefined,
  sessions: { sessions: number; seconds: number } | undefined,
  at: Date,
): PeriodStats {
  const seconds = sessions?.seconds ?? 0;
  return {
    stats: {
      devSessions: sessions?.sessions ?? 0,
      devEvents: events?.events ?? 0,
      devDownAlerts: events?.downAlerts ?? 0,
      devPresenceHours: presenceHours(seconds),
    },
    seconds,
    slope: 0,
    until: at.getTime(),
  };
}

export class PeriodStatistics {
  private readonly eventCountsStmt: Statement<
    [{ mac: string; start: string }],
    { events: number; downAlerts: number }
  >;
  private readonly sessionStatsStmt: Statement<
    [{ mac: string; start: string; now: string }],
    { sessions: number; seconds: number; openSessions: number; latestOpenStart: string | null }
  >;
  private readonly keptStmt: Statement<[{ mac: string; start: string; now: string }], KeptRow>;
  private readonly bucketsStmt: Statement<
    [{ mac: string; dayFrom: string; dayTo: string; monthFrom: string }],
    BucketsRow
  >;
  private readonly edgeEventsStmt: Statement<[EdgeParams], { events: number; downAlerts: number }>;
  private readonly edgeEndedStmt: Statement<[EdgeParams], { n: number; sum: number }>;
  private readonly edgeStartedStmt: Statement<[EdgeParams], { n: number; sum: number }>;
  private readonly nextChangeStmt: Statement<[{ mac: string; start: string }], NextChangeRow>;

  constructor(db: Database) {
    this.eventCountsStmt = db.prepare(deviceSql.eventCounts);
    this.sessionStatsStmt = db.prepare(deviceSql.sessionStats);
    this.keptStmt = db.prepare(countSql.kept);
    this.bucketsStmt = db.prepare(countSql.buckets);
    this.edgeEventsStmt = db.prepare(countSql.edgeEvents);
    this.edgeEndedStmt = db.prepare(countSql.edgeEnded);
    this.edgeStartedStmt = db.prepare(countSql.edgeStarted);
    this.nextChangeStmt = db.prepare(countSql.nextChange);
  }

  /** The counts of one period; run inside a read transaction (one snapshot). */
  of(mac: string, period: Period, now: Date): PeriodStats {
    const start = periodStart(period, now) ?? '';
    const nowText = dbTime(now);
    const kept = this.keptStmt.get({ mac, start, now: nowText });
    const totals: TotalsRow = kept ?? noTotals;
    if (period !== 'all' && totals.irregular > 0)
      return recountedPeriodStats(
        this.eventCountsStmt.get({ mac, start }),
        this.sessionStatsStmt.get({ mac, start, now: nowText }),
        now,
      );
    const open: OpenRow =
      kept === undefined
        ? noOpen
        : {
            sessions: kept.openSessions,
            seconds: kept.openSeconds,
            growing: kept.openGrowing,
            nextStart: kept.openNextStart,
            irregular: kept.openIrregular,
          };
    let window: PeriodWindowRows | undefined;
    if (period !== 'all') {
      const bounds = bucketBounds(start);
      const edge = { mac, start, dayFrom: bounds.dayFrom };
      window = {
        buckets: this.bucketsStmt.get({ mac, ...bounds }),
        edgeEvents: this.edgeEventsStmt.get(edge),
        ended: this.edgeEndedStmt.get(edge),
        started: this.edgeStartedStmt.get(edge),
        next: this.nextChangeStmt.get({ mac, start }),
      };
    }
    return keptPeriodStats(period, now, start, totals, open, window);
  }
}

/** The earliest of `times` (Unix ms); `now` when one is not a time; null when there are none. */
function earliest(times: readonly number[], now: Date): number | null {
  let result: number | null = null;
  for (const time of times) {
    if (Number.isNaN(time)) return now.getTime();
    if (result === null || time < result) result = time;
  }
  return result;
}
