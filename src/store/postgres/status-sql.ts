/**
 * The status predicates of sqlite/status-sql.ts in PostgreSQL's dialect, derived from them (one
 * rule, written once): the catalogue's `dev…` columns quoted (PostgreSQL folds bare names to lower
 * case), and SQLite's `x IS 1` / `x IS NOT 1` (NULL counts as unset) as `IS NOT DISTINCT FROM 1` /
 * `IS DISTINCT FROM 1`. The texts are built from constants only, never from a request.
 */
import type { DeviceGroup, PresenceGroup } from '../../devices/status.js';
import { presenceGroups } from '../../devices/status.js';
import { deviceGroupSql, presenceGroupSql } from '../sqlite/status-sql.js';

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
