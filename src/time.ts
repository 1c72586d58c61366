/**
 * Times are stored as UTC text `YYYY-MM-DD HH:MM:SS` (sortable, NetAlertX-compatible) and shown to
 * clients as ISO 8601 with `Z`.
 */

/** A Date as storage text. */
export function dbTime(date: Date): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

/** Storage text as ISO 8601 (`2024-05-01T10:00:00Z`). */
export function fromDbTime(value: string): string {
  return `${value.replace(' ', 'T')}Z`;
}

/** Time text accepted from clients (its source, for the route schemas and OpenAPI). */
export const acceptedTimePattern =
  '^\\d{4}-\\d{2}-\\d{2}(?:[T ]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,9})?)?(?:Z|[+-]\\d{2}:?\\d{2})?)?$';
const acceptedTime = new RegExp(acceptedTimePattern);

/**
 * Client time text as storage text. Accepts ISO 8601 with Z or an offset, or a date-time with no
 * zone (taken as UTC, as stored). Throws RangeError on anything else.
 */
export function toDbTime(value: string): string {
  if (!acceptedTime.test(value)) throw new RangeError(`'${value}' is not an ISO 8601 date-time`);
  const hasZone = /(?:Z|[+-]\d{2}:?\d{2})$/.test(value) && value.length > 10;
  const date = new Date(hasZone ? value : `${value.replace(' ', 'T')}${value.length > 10 ? 'Z' : ''}`);
  if (Number.isNaN(date.getTime())) throw new RangeError(`'${value}' is not a valid date-time`);
  // Date rolls impossible days over (2024-02-31 -> 2024-03-02): compare the fields as written.
  const [year, month, day] = value.slice(0, 10).split('-').map(Number);
  const written = new Date(Date.UTC(year ?? 0, (month ?? 1) - 1, day ?? 0));
  if (
    written.getUTCMonth() !== (month ?? 1) - 1 ||
    written.getUTCDate() !== day ||
    /[T ]24:/.test(value) // Date reads hour 24 as the next day's midnight; minutes/seconds >= 60 are NaN
  )
    throw new RangeError(`'${value}' is not a valid date-time`);
  // Storage text has a four-digit year; an offset may not push the UTC time out of it.
  if (date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999)
    throw new RangeError(`'${value}' is outside the years 0001-9999`);
  return dbTime(date);
}

/** The periods accepted by `?period=`, with their length in days (null: all time). */
export const periods = { '1 day': 1, '7 days': 7, '1 month': 30, '1 year': 365, all: null } as const;
export type Period = keyof typeof periods;

/** Start of a period, or null for `all`. */
export function periodStartDate(period: Period, now: Date): Date | null {
  const days = periods[period];
  return days === null ? null : new Date(now.getTime() - days * 86_400_000);
}

/** Start of a period as storage text, or null for `all`. */
export function periodStart(period: Period, now: Date): string | null {
  const start = periodStartDate(period, now);
  return start === null ? null : dbTime(start);
}
