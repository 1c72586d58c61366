/**
 * The status predicates of sqlite/status-sql.ts in PostgreSQL's dialect, derived from them (one
 * rule, written once): the catalogue's `dev…` columns quoted (PostgreSQL folds bare names to lower
 * case), and SQLite's `x IS 1` / `x IS NOT 1` (NULL counts as unset) as `IS NOT DISTINCT FROM 1` /
 * `IS DISTINCT FROM 1`. The texts are built from constants only, never from a request.
 */
import type { DeviceGroup, DeviceStatus, PresenceGroup } from '../../devices/status.js';
import { presenceGroups } from '../../devices/status.js';
import { deviceGroupSql, deviceStatusSql, presenceGroupSql } from '../sqlite/status-sql.js';

/** A predicate of sqlite/status-sql.ts over a Devices row, for PostgreSQL. */
export function postgresPredicate(sqlite: string): string {
  return sqlite
    .replace(/\bIS NOT 1\b/g, 'IS DISTINCT FROM 1')
    .replace(/\bIS 1\b/g, 'IS NOT DISTINCT FROM 1')
    .replace(/(?<!")\b(dev[A-Za-z0-9_]+)\b(?!")/g, '"$1"');
}

/** The predicate of a device group or presence group (NetAlertX's by-status lists). */
export function groupPredicate(group: DeviceGroup | PresenceGroup): string {
  return postgresPredicate(
    (presenceGroups as readonly string[]).includes(group)
      ? presenceGroupSql(group as PresenceGroup)
      : deviceGroupSql(group as DeviceGroup),
  );
}

/** The predicate of a devStatus value over a Devices row. */
export function statusPredicate(status: DeviceStatus): string {
  return postgresPredicate(deviceStatusSql(status));
}

/**
 * devSleeping and devFlapping over the Devices row named `row` (the table or an alias):
 * sqlite/status-sql.ts' `presenceFlagSql` (the scanner's memory in ScanState), written for
 * PostgreSQL, where a table name must be quoted and a subquery's alias keeps `row` apart.
 */
export function presenceFlagSql(row: string): { readonly devSleeping: string; readonly devFlapping: string } {
  return {
    devSleeping: `("devCanSleep" = 1 AND ${row}."devPresentLastScan" = 1
    AND EXISTS (SELECT 1 FROM "ScanState" s WHERE s."mac" = ${row}."devMac" AND s."misses" > 0))`,
    devFlapping: `EXISTS (SELECT 1 FROM "ScanState" s WHERE s."mac" = ${row}."devMac" AND s."flapping" = 1)`,
  };
}

/** The flags as 0/1 result columns (`..., <sql>::int AS "devSleeping", ...`). */
export function presenceFlagColumns(row: string): string {
  return Object.entries(presenceFlagSql(row))
    .map(([name, sql]) => `(${sql})::int AS "${name}"`)
    .join(', ');
}
