/**
 * Seeds a known event and session history straight into the Events and Sessions tables (their shape
 * is fixed by DESIGN 4), and computes, independently of the server, what the computed counts must be
 * for each period at a given "now".
 */
import type { Database } from 'better-sqlite3';
import { dbTime } from '../../src/time.js';

const hour = 3_600_000;
const day = 24 * hour;

export interface SeedEvent {
  readonly at: number;
  readonly type: string;
}

export interface SeedSession {
  /** Connection time, null for a session whose start was never recorded. */
  readonly from: number | null;
  /** Disconnection time, null while still connected. */
  readonly to: number | null;
}

/** A history relative to `t0` (ms): sessions straddling each period start, an open one, a null start. */
export function history(t0: number): { events: SeedEvent[]; sessions: SeedSession[] } {
  return {
    events: [
      { at: t0 - 500 * day, type: 'New Device' },
      { at: t0 - 400 * day, type: 'Connected' },
      { at: t0 - 399 * day, type: 'Disconnected' },
      { at: t0 - 200 * day, type: 'Device Down' },
      { at: t0 - 40 * day, type: 'IP Changed' },
      { at: t0 - 20 * day, type: 'Device Down' },
      { at: t0 - 19 * day, type: 'Down Reconnected' },
      { at: t0 - 3 * day, type: 'Device Down' },
      { at: t0 - 3 * day + hour, type: 'Connected' },
      { at: t0 - 12 * hour, type: 'IP Changed' },
      { at: t0 - 2 * hour, type: 'Connected' },
      { at: t0 - hour, type: 'Device Down' },
    ],
    sessions: [
      { from: t0 - 400 * day, to: t0 - 399 * day }, // only in `all`
      { from: t0 - 366 * day, to: t0 - 364 * day }, // straddles the 1 year start
      { from: t0 - 40 * day, to: t0 - 29 * day }, // straddles the 1 month start
      { from: t0 - 10 * day, to: t0 - 10 * day + 5 * hour }, // inside the month
      { from: t0 - 8 * day, to: t0 - 6 * day }, // straddles the 7 days start
      { from: t0 - 30 * hour, to: t0 - 20 * hour }, // straddles the 1 day start
      { from: null, to: t0 - hour }, // unknown start: counts, adds no hours
      { from: t0 - 2 * hour, to: null }, // still open
    ],
  };
}

export const periodDays = { '1 day': 1, '7 days': 7, '1 month': 30, '1 year': 365, all: null } as const;
export type PeriodName = keyof typeof periodDays;

export interface ExpectedStats {
  devSessions: number;
  devEvents: number;
  devDownAlerts: number;
  /** Unrounded hours. */
  hours: number;
}

/** The DESIGN 4 rules, written out plainly over the seeded values. */
export function expectedStats(
  seed: { events: SeedEvent[]; sessions: SeedSession[] },
  period: PeriodName,
  now: number,
): ExpectedStats {
  const days = periodDays[period];
  const start = days === null ? -Infinity : now - days * day;
  const inPeriod = seed.events.filter((e) => e.at >= start);
  const sessions = seed.sessions.filter((s) => s.to === null || s.to > start);
  let ms = 0;
  for (const s of sessions) {
    if (s.from === null) continue;
    ms += Math.max(0, (s.to ?? now) - Math.max(s.from, start));
  }
  return {
    devSessions: sessions.length,
    devEvents: inPeriod.filter((e) => e.type !== 'Connected' && e.type !== 'Disconnected').length,
    devDownAlerts: inPeriod.filter((e) => e.type === 'Device Down').length,
    hours: ms / hour,
  };
}

/** Writes the history of `mac` into an open database. */
export function seedHistory(
  db: Database,
  mac: string,
  seed: { events: SeedEvent[]; sessions: SeedSession[] },
): void {
  const insertEvent = db.prepare(
    "INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType) VALUES (?, '192.0.2.1', ?, ?)",
  );
  const insertSession = db.prepare(
    `INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
       ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected)
     VALUES (?, '192.0.2.1', 'Connected', ?, ?, ?, ?)`,
  );
  db.transaction(() => {
    for (const e of seed.events) insertEvent.run(mac, dbTime(new Date(e.at)), e.type);
    for (const s of seed.sessions) {
      insertSession.run(
        mac,
        s.from === null ? null : dbTime(new Date(s.from)),
        s.to === null ? '' : 'Disconnected',
        s.to === null ? null : dbTime(new Date(s.to)),
        s.to === null ? 1 : 0,
      );
    }
  })();
}

/** Every row of the three tables, for "nothing changed" assertions. */
export function dump(db: Database): string {
  return ['Devices', 'Events', 'Sessions']
    .map(
      (table) =>
        `${table}\n${JSON.stringify(db.prepare(`SELECT rowid, * FROM ${table} ORDER BY rowid`).all())}`,
    )
    .join('\n');
}

/** The non-empty rows of the count tables (DeviceHistoryTotals, DeviceHistoryBuckets), in key order. */
export function dumpCounts(db: Database): unknown {
  return {
    totals: db
      .prepare(
        'SELECT * FROM DeviceHistoryTotals WHERE events OR downAlerts OR sessions OR closedSeconds OR irregular ORDER BY mac',
      )
      .all(),
    buckets: db
      .prepare(
        'SELECT * FROM DeviceHistoryBuckets WHERE events OR downAlerts OR ended OR started ORDER BY mac, span, bucket',
      )
      .all(),
  };
}
