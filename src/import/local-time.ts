/**
 * NetAlertX and Pi.Alert store the local wall-clock time of the machine they ran on, as text
 * `YYYY-MM-DD HH:MM:SS`. netkeep stores UTC. `LocalTimeReader` turns the one into the other for one
 * IANA zone, deterministically around daylight-saving changes, the way Temporal's 'compatible'
 * disambiguation does:
 *   - a time that happened twice (the hour repeated when clocks go back) is the EARLIER instant;
 *   - a time that never happened (the hour skipped when clocks go forward) is moved forward by the
 *     length of the gap (02:30 on a spring-forward night is read as 03:30 summer time).
 * A text that carries its own zone (`Z` or `+01:00`) is taken as written.
 *
 * Offsets come from Intl (the ICU time-zone data Node ships) and are cached per day of UTC, and the
 * resulting shifts per day of local time, but only for a day whose first and last second agree:
 * a day with a transition in it (two a year) is computed exactly, time by time. No zone changes its
 * offset twice in one day and back, so the caches can only save work, never change an answer.
 */

const dayMs = 24 * 60 * 60 * 1000;
/** Bounded: a century of days. */
const maxCachedBuckets = 40_000;

const timeText =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/;

/** True when `zone` names an IANA time zone this Node knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The zone of this machine (TZ, /etc/localtime), as Intl resolves it. */
export function machineTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

interface Fields {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

function validFields(f: Fields): boolean {
  if (f.year < 1 || f.month < 1 || f.month > 12 || f.day < 1) return false;
  if (f.hour > 23 || f.minute > 59 || f.second > 59) return false;
  const daysInMonth = new Date(Date.UTC(f.year, f.month, 0)).getUTCDate();
  return f.day <= daysInMonth;
}

function wallClockMs(f: Fields): number {
  const date = new Date(Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second));
  date.setUTCFullYear(f.year); // Date.UTC maps years 0..99 to 1900..1999
  return date.getTime();
}

export class LocalTimeReader {
  private readonly format: Intl.DateTimeFormat;
  private readonly offsets = new Map<number, number>();
  /** utc - wall for each local day whose two ends agree (one lookup per time read). */
  private readonly shifts = new Map<number, number>();

  constructor(readonly zone: string) {
    this.format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
  }

  /**
   * Storage text (UTC `YYYY-MM-DD HH:MM:SS`) of a source time, or null when the text is not a
   * date-time (or a date) that exists in the calendar. Fractions of a second are dropped.
   */
  toUtc(text: string): string | null {
    const match = timeText.exec(text.trim());
    if (match === null) return null;
    const [, y, mo, d, h, mi, s, zone] = match;
    const fields: Fields = {
      year: Number(y),
      month: Number(mo),
      day: Number(d),
      hour: Number(h ?? 0),
      minute: Number(mi ?? 0),
      second: Number(s ?? 0),
    };
    if (!validFields(fields)) return null;
    const wall = wallClockMs(fields);
    let utc: number;
    if (zone !== undefined) {
      const offsetMinutes =
        zone === 'Z'
          ? 0
          : (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(-2)));
      utc = wall - offsetMinutes * 60_000;
    } else {
      utc = this.wallToUtc(wall);
    }
    const date = new Date(utc);
    if (Number.isNaN(utc) || date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) return null;
    return date.toISOString().slice(0, 19).replace('T', ' ');
  }

  /** The instant whose local wall clock reads `wall` (both as ms; see the class comment). */
  private wallToUtc(wall: number): number {
    const bucket = Math.floor(wall / dayMs);
    const cached = this.shifts.get(bucket);
    if (cached !== undefined) return wall + cached;
    const shift = this.resolveWall(wall) - wall;
    const start = bucket * dayMs;
    const end = start + dayMs - 1000;
    if (this.resolveWall(start) - start === shift && this.resolveWall(end) - end === shift) {
      if (this.shifts.size >= maxCachedBuckets) this.shifts.clear();
      this.shifts.set(bucket, shift);
    }
    return wall + shift;
  }

  private resolveWall(wall: number): number {
    // The offsets in force a day either side cover every transition that could touch this time.
    const before = this.offsetAt(wall - dayMs);
    const after = this.offsetAt(wall + dayMs);
    const candidates = [before, after]
      .map((offset) => wall - offset)
      .filter((utc) => wall - this.offsetAt(utc) === utc)
      .sort((a, b) => a - b);
    const earliest = candidates[0];
    if (earliest !== undefined) return earliest;
    // In a gap: read with the offset from before the change, which lands after the gap.
    return wall - before;
  }

  /** Offset (local minus UTC, ms) of the zone at a UTC instant. */
  private offsetAt(utc: number): number {
    const bucket = Math.floor(utc / dayMs);
    const cached = this.offsets.get(bucket);
    if (cached !== undefined) return cached;
    const offset = this.computeOffset(utc);
    const start = bucket * dayMs;
    if (this.computeOffset(start) === offset && this.computeOffset(start + dayMs - 1) === offset) {
      if (this.offsets.size >= maxCachedBuckets) this.offsets.clear();
      this.offsets.set(bucket, offset);
    }
    return offset;
  }

  private computeOffset(utc: number): number {
    const parts: Record<string, string> = {};
    for (const part of this.format.formatToParts(new Date(utc))) parts[part.type] = part.value;
    const year = Number(parts.year) * (parts.era === 'BC' || parts.era === 'B' ? -1 : 1);
    const local = wallClockMs({
      year: year,
      month: Number(parts.month),
      day: Number(parts.day),
      hour: Number(parts.hour),
      minute: Number(parts.minute),
      second: Number(parts.second),
    });
    return local - (utc - (((utc % 1000) + 1000) % 1000));
  }
}
