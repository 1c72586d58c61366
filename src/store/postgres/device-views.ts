/**
 * A device's view on PostgreSQL (`DeviceStore.get`, `getTimed`, `stats`, ../devices.ts): its row
 * with the presence flags, its MACs, its children and its counts for a period, with how they follow
 * the clock (TimedView), the same answers as the SQLite store's (sqlite/devices.ts `getTimed`,
 * sqlite/period-stats.ts).
 *
 * The counts are read from the rows the count triggers keep (DeviceHistoryTotals and
 * DeviceHistoryBuckets, same arithmetic as SQLite's: postgres/migrations.ts) with SQLite's
 * statements (`countSql` in sqlite/device-sql.ts) translated, and given to the same functions
 * (`keptPeriodStats`, `recountedPeriodStats`); a device with irregular history rows is recounted
 * from the raw rows for periods other than `all`, as there. A period's statistics are one prepared
 * statement (the recount in it too, behind a condition on the totals, so that it runs only for an
 * irregular device); a view reads the device's row and then that statement in one snapshot
 * (REPEATABLE READ), as SQLite's read transaction does.
 *
 * What SQLite does that PostgreSQL does differently, and how it is kept the same here:
 * - `unixepoch(t)` and `datetime(t) IS t` are `netkeep_unixepoch(t)` and
 *   `netkeep_canonical_time(t)` (the migrations' functions, SQLite's readings of time text);
 * - SQLite's `MAX(a, b)` is NULL when either is NULL, PostgreSQL's `greatest` skips a NULL: a
 *   session with no connection time is therefore clipped by a CASE (`clippedConnection`), and
 *   `greatest(0, x)` is only used where a NULL x would be skipped by the sum anyway (TOTAL);
 * - `TOTAL(x)` (0 over no rows) is `coalesce(sum(x), 0)`;
 * - `ORDER BY t LIMIT 1` over rows whose t is not NULL is `min(t)`; times compare as text under
 *   COLLATE "C" (the columns'), as SQLite's BINARY.
 */
import { dbTime, periodStart, type Period } from '../../time.js';
import { storedFields, type DeviceRow } from '../../devices/catalogue.js';
import type { DeviceChild, DeviceStats, DeviceView, TimedView } from '../devices.js';
import { childColumns } from '../sqlite/device-sql.js';
import { childOf, deviceViewOf, type ChildRow } from '../sqlite/devices.js';
import {
  bucketBounds,
  keptPeriodStats,
  recountedPeriodStats,
  type PeriodStats,
} from '../sqlite/period-stats.js';
import type { PoolClient } from 'pg';
import type { PostgresPool } from './pool.js';
import { presenceFlagColumns } from './status-sql.js';

const open = '("ses_DateTimeDisconnection" IS NULL OR "ses_StillConnected" = 1)';
const conn = '"ses_DateTimeConnection"';
const disc = '"ses_DateTimeDisconnection"';
const counted = `"eve_EventType" NOT IN ('Connected', 'Disconnected')`;
/** SQLite's `MAX(ses_DateTimeConnection, @start)`: NULL when the session has no connection time. */
const clippedConnection = `CASE WHEN ${conn} IS NULL THEN NULL WHEN ${conn} > $2::text THEN ${conn} ELSE $2::text END`;
/** SQLite's `MAX(0, unixepoch(end) - unixepoch(from))`, inside a sum (see the file's comment). */
const secondsBetween = (from: string, end: string): string =>
  `greatest(0, netkeep_unixepoch(${end}) - netkeep_unixepoch(${from}))`;

/**
 * The parts of a period's counts as one row. Parameters: $1 the MAC, $2 the period start as
 * storage text ('' for `all`), $3 now as storage text; for a period other than `all` (`window`),
 * $4 `dayFrom`, $5 `dayTo`, $6 `monthFrom` of `bucketBounds`.
 */
function statsSql(window: boolean): string {
  // countSql.kept: the totals (no row: zeros) and the open sessions.
  const kept = `SELECT coalesce(t."events", 0) AS "tEvents", coalesce(t."downAlerts", 0) AS "tDownAlerts",
      coalesce(t."sessions", 0) AS "tSessions", coalesce(t."closedSeconds", 0) AS "tClosedSeconds",
      coalesce(t."irregular", 0) AS "tIrregular", o.*${window ? ', b.*, e.*, en.*, st.*, nx.*, re.*, rs.*' : ''}
    FROM (VALUES (1)) AS one (x)
    LEFT JOIN "DeviceHistoryTotals" t ON t."mac" = $1
    CROSS JOIN LATERAL (
      SELECT count(*) AS "oSessions",
        coalesce(sum(${secondsBetween(clippedConnection, '$3::text')}), 0) AS "oSeconds",
        count(*) FILTER (WHERE ${conn} >= $2::text AND ${conn} <= $3::text) AS "oGrowing",
        min(${conn}) FILTER (WHERE ${conn} > $3::text) AS "oNextStart",
        count(*) FILTER (WHERE ${conn} IS NOT NULL AND NOT netkeep_canonical_time(${conn})) AS "oIrregular"
      FROM "Sessions" WHERE "ses_MAC" = $1 AND ${open}) o`;
  if (!window) return kept;
  // countSql.buckets, edgeEvents, edgeEnded, edgeStarted, nextChange; then deviceSql.eventCounts
  // and sessionStats (the recount), only when the totals say the device has irregular rows.
  const irregular = 'coalesce(t."irregular", 0) > 0';
  return `${kept}
    CROSS JOIN LATERAL (
      SELECT coalesce(sum("events"), 0) AS "bEvents", coalesce(sum("downAlerts"), 0) AS "bDownAlerts",
        coalesce(sum("ended"), 0) AS "bEnded", coalesce(sum("endedSum"), 0) AS "bEndedSum",
        coalesce(sum("started"), 0) AS "bStarted", coalesce(sum("startedSum"), 0) AS "bStartedSum"
      FROM (
        SELECT "events", "downAlerts", "ended", "endedSum", "started", "startedSum" FROM "DeviceHistoryBuckets"
          WHERE "mac" = $1 AND "span" = 10 AND "bucket" >= $4::text AND "bucket" < $5::text
        UNION ALL
        SELECT "events", "downAlerts", "ended", "endedSum", "started", "startedSum" FROM "DeviceHistoryBuckets"
          WHERE "mac" = $1 AND "span" = 7 AND "bucket" >= $6::text) AS u) b
    CROSS JOIN LATERAL (
      SELECT count(*) FILTER (WHERE ${counted}) AS "eEvents",
        count(*) FILTER (WHERE "eve_EventType" = 'Device Down') AS "eDownAlerts"
      FROM "Events" WHERE "eve_MAC" = $1 AND "eve_DateTime" >= $2::text AND "eve_DateTime" < $4::text) e
    CROSS JOIN LATERAL (
      SELECT count(*) AS "endedN", coalesce(sum(netkeep_unixepoch(${disc})), 0) AS "endedSum"
      FROM "Sessions" WHERE "ses_MAC" = $1 AND ${disc} > $2::text AND ${disc} < $4::text AND NOT ${open}) en
    CROSS JOIN LATERAL (
      SELECT count(*) AS "startedN", coalesce(sum(netkeep_unixepoch(${conn})), 0) AS "startedSum"
      FROM "Sessions" WHERE "ses_MAC" = $1 AND ${conn} >= $2::text AND ${conn} < $4::text
        AND ${disc} > $2::text AND NOT ${open}) st
    CROSS JOIN LATERAL (
      SELECT
        (SELECT min("eve_DateTime") FROM "Events"
          WHERE "eve_MAC" = $1 AND "eve_DateTime" >= $2::text AND ${counted}) AS "nEvent",
        (SELECT min(${disc}) FROM "Sessions"
          WHERE "ses_MAC" = $1 AND ${disc} > $2::text AND NOT ${open}) AS "nEnded",
        (SELECT min(${conn}) FROM "Sessions" WHERE "ses_MAC" = $1 AND ${conn} >= $2::text) AS "nStarted") nx
    CROSS JOIN LATERAL (
      SELECT count(*) FILTER (WHERE ${counted}) AS "rEvents",
        count(*) FILTER (WHERE "eve_EventType" = 'Device Down') AS "rDownAlerts"
      FROM "Events" WHERE ${irregular} AND "eve_MAC" = $1 AND "eve_DateTime" >= $2::text) re
    CROSS JOIN LATERAL (
      SELECT count(*) AS "rSessions",
        coalesce(sum(${secondsBetween(clippedConnection, `CASE WHEN ${open} THEN $3::text ELSE ${disc} END`)}), 0)
          AS "rSeconds"
      FROM "Sessions" WHERE ${irregular} AND "ses_MAC" = $1 AND (${open} OR ${disc} > $2::text)) rs`;
}

/** One row of `statsSql` (the window and recount columns only for a period other than `all`). */
interface StatsRow {
  tEvents: number;
  tDownAlerts: number;
  tSessions: number;
  tClosedSeconds: number;
  tIrregular: number;
  oSessions: number;
  oSeconds: number;
  oGrowing: number;
  oNextStart: string | null;
  oIrregular: number;
  bEvents?: number;
  bDownAlerts?: number;
  bEnded?: number;
  bEndedSum?: number;
  bStarted?: number;
  bStartedSum?: number;
  eEvents?: number;
  eDownAlerts?: number;
  endedN?: number;
  endedSum?: number;
  startedN?: number;
  startedSum?: number;
  nEvent?: string | null;
  nEnded?: string | null;
  nStarted?: string | null;
  rEvents?: number;
  rDownAlerts?: number;
  rSessions?: number;
  rSeconds?: number;
}

/**
 * The rest of the transaction uses the generic plan of a prepared statement. The statistics'
 * generic plan is index lookups by MAC; left to choose, PostgreSQL plans them anew for a short
 * period (its estimate for a narrow time range looks cheaper), and that planning costs ten times
 * the execution. Only inside this module's own read transactions, after the device row (whose
 * children lookup needs its value: see `viewSql`).
 */
const genericPlans = `set_config('plan_cache_mode', 'force_generic_plan', true)`;

/**
 * The device row, its flags, aliases (MAC order) and children (MAC order). The subqueries compare
 * with $1 rather than d."devMac": most devices have no parent, so a plan for an unknown MAC would
 * scan Devices for the children; with the value, it takes the index. (So this statement is planned
 * for its value each time; it is a cheap one to plan.)
 */
const viewSql = `SELECT ${storedFields.map((f) => `d."${f.name}"`).join(', ')}, ${presenceFlagColumns('d')},
    ARRAY(SELECT "dma_MAC" FROM "DeviceMacs" WHERE "dma_DevMac" = $1 ORDER BY "dma_MAC") AS "netkeepAliases",
    (SELECT coalesce(json_agg(json_build_object(${childColumns.map((c) => `'${c}', c."${c}"`).join(', ')})
        ORDER BY c."devMac"), '[]'::json)
      FROM "Devices" c WHERE c."devParentMAC" = $1) AS "netkeepChildren",
    ${genericPlans} AS "netkeepPlans"
  FROM "Devices" d WHERE d."devMac" = $1`;

/**
 * Every statement here (exported for a test to EXPLAIN). The statistics are prepared statements
 * (`name`): planning them is most of their cost, and every lookup in them is by MAC through an
 * index, which a plan made once per connection serves as well as one made for each MAC.
 */
export const deviceViewSql = {
  stats: {
    all: { name: 'netkeep_device_stats_all', text: statsSql(false) },
    window: { name: 'netkeep_device_stats_window', text: statsSql(true) },
  },
  view: viewSql,
} as const;

/** The parameters of `statsSql` for `period` at `now`, and the period start as storage text. */
function statsParams(mac: string, period: Period, now: Date): { values: string[]; start: string } {
  const start = periodStart(period, now) ?? '';
  const values = [mac, start, dbTime(now)];
  if (period !== 'all') {
    const bounds = bucketBounds(start);
    values.push(bounds.dayFrom, bounds.dayTo, bounds.monthFrom);
  }
  return { values, start };
}

/** The rows of `statsSql` given to the SQLite store's arithmetic. */
function periodStatsOf(row: StatsRow, period: Period, now: Date, start: string): PeriodStats {
  const totals = {
    events: row.tEvents,
    downAlerts: row.tDownAlerts,
    sessions: row.tSessions,
    closedSeconds: row.tClosedSeconds,
    irregular: row.tIrregular,
  };
  if (period !== 'all' && totals.irregular > 0)
    return recountedPeriodStats(
      { events: row.rEvents ?? 0, downAlerts: row.rDownAlerts ?? 0 },
      { sessions: row.rSessions ?? 0, seconds: row.rSeconds ?? 0 },
      now,
    );
  const open = {
    sessions: row.oSessions,
    seconds: row.oSeconds,
    growing: row.oGrowing,
    nextStart: row.oNextStart,
    irregular: row.oIrregular,
  };
  const window =
    period === 'all'
      ? undefined
      : {
          buckets: {
            events: row.bEvents ?? 0,
            downAlerts: row.bDownAlerts ?? 0,
            ended: row.bEnded ?? 0,
            endedSum: row.bEndedSum ?? 0,
            started: row.bStarted ?? 0,
            startedSum: row.bStartedSum ?? 0,
          },
          edgeEvents: { events: row.eEvents ?? 0, downAlerts: row.eDownAlerts ?? 0 },
          ended: { n: row.endedN ?? 0, sum: row.endedSum ?? 0 },
          started: { n: row.startedN ?? 0, sum: row.startedSum ?? 0 },
          next: { event: row.nEvent ?? null, ended: row.nEnded ?? null, started: row.nStarted ?? null },
        };
  return keptPeriodStats(period, now, start, totals, open, window);
}

/** A row of `viewSql`: the device's columns and flags (a `DeviceRow`), its aliases and children (and `netkeepPlans`). */
interface ViewRow {
  netkeepAliases: string[];
  netkeepChildren: ChildRow[];
}

/** The statistics of `mac` for `period` at `now`, on `client` (inside the caller's snapshot). */
async function readStats(client: PoolClient, mac: string, period: Period, now: Date): Promise<PeriodStats> {
  const { values, start } = statsParams(mac, period, now);
  const statement = deviceViewSql.stats[period === 'all' ? 'all' : 'window'];
  const { rows } = await client.query<StatsRow>({ ...statement, values });
  const row = rows[0];
  if (row === undefined) throw new Error('the statistics statement gave no row');
  return periodStatsOf(row, period, now, start);
}

export class PostgresDeviceViews {
  constructor(private readonly store: PostgresPool) {}

  /**
   * The device with its computed fields and how they follow the clock; undefined for no device.
   * Its row and its statistics are read in one snapshot, as SQLite's read transaction does.
   */
  getTimed(mac: string, period: Period, now: Date): Promise<TimedView | undefined> {
    return this.store.transaction(async (client) => {
      const row = (await client.query<ViewRow>(deviceViewSql.view, [mac])).rows[0];
      if (row === undefined) return undefined;
      const { stats, seconds, slope, until } = await readStats(client, mac, period, now);
      const children: DeviceChild[] = row.netkeepChildren.map(childOf);
      const view: DeviceView = deviceViewOf(
        row as unknown as DeviceRow,
        [mac, ...row.netkeepAliases],
        children,
        stats,
      );
      return { view, seconds, slope, until: until === null ? null : new Date(until) };
    }, 'snapshot');
  }

  async get(mac: string, period: Period, now: Date): Promise<DeviceView | undefined> {
    return (await this.getTimed(mac, period, now))?.view;
  }

  /** The device's counts for the period (zeros when it has no history, or does not exist). */
  async stats(mac: string, period: Period, now: Date): Promise<DeviceStats> {
    const read = await this.store.transaction(async (client) => {
      await client.query(`SELECT ${genericPlans}`);
      return readStats(client, mac, period, now);
    }, 'snapshot');
    return read.stats;
  }
}
