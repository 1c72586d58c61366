/**
 * GET /devices' query (src/devices/list-query.ts) as SQL: every piece of text comes from constants
 * here, the status predicates of status-sql.ts and the catalogue's column names; the search text is
 * only ever a bound parameter (LIKE with its wildcards escaped).
 */
import type { Database } from 'better-sqlite3';
import { fieldsByName } from '../../devices/catalogue.js';
import {
  macSearchText,
  naturalKey,
  naturalKeyFunction,
  searchColumns,
  type DeviceListQuery,
  type DeviceListStatus,
  type SortColumn,
} from '../../devices/list-query.js';
import { deviceStatuses, type DeviceGroup, type DeviceStatus } from '../../devices/status.js';
import { deviceGroupSql, deviceStatusSql, presenceFlagSql } from './status-sql.js';

/** Devices without a name (nothing, or the default '(unknown)') sort after the named ones, in either order. */
const unnamedLast = "(devName = '' OR devName = '(unknown)')";

/** The ORDER BY term of a sort column. Text sorts ignore case; devStatus sorts by its text. */
function orderTerm(column: SortColumn): string {
  if (column === 'devStatus')
    return `CASE WHEN ${deviceStatusSql('On-line')} THEN 'On-line' WHEN ${deviceStatusSql('Down')} THEN 'Down' ELSE 'Off-line' END`;
  const kind = fieldsByName.get(column)?.kind;
  return kind === 'text' && column !== 'devMac' ? `${column} COLLATE NOCASE` : column;
}

function statusPredicate(status: DeviceListStatus | undefined): string | undefined {
  if (status === undefined || status === 'all') return undefined;
  if ((deviceStatuses as readonly string[]).includes(status)) return deviceStatusSql(status as DeviceStatus);
  return deviceGroupSql(status as DeviceGroup);
}

function flagPredicate(flag: keyof typeof presenceFlagSql, wanted: boolean | undefined): string | undefined {
  if (wanted === undefined) return undefined;
  return wanted ? presenceFlagSql[flag] : `NOT ${presenceFlagSql[flag]}`;
}

/**
 * devRandomMac in SQL: the second hex digit of the canonical devMac has bit 0x2 set. A constant
 * text, so a `?random=` list shape is prepared once like any other.
 */
const randomMacSql = "substr(devMac, 2, 1) IN ('2', '3', '6', '7', 'a', 'b', 'e', 'f')";

function randomPredicate(random: 0 | 1 | undefined): string | undefined {
  if (random === undefined) return undefined;
  return random === 1 ? randomMacSql : `NOT ${randomMacSql}`;
}

/** `@q` matches name, IP, vendor and owner; `@qmac` the MAC (the text with '-' read as ':'). */
const searchPredicate = `(devMac LIKE @qmac ESCAPE '\\' OR ${searchColumns
  .map((column) => `${column} LIKE @q ESCAPE '\\'`)
  .join(' OR ')})`;

/**
 * The SQL texts of one list shape. The same shape (status, search or not, sort, order) always gives
 * the same text, so a caller can prepare each shape once and keep it. Without sort and search the
 * page is a walk of the devMac primary key, with no sort step.
 */
export function deviceListSql(
  query: DeviceListQuery,
  columnList: string,
): { readonly page: string; readonly total: string; readonly order: string } {
  const conditions = [
    statusPredicate(query.status),
    flagPredicate('devSleeping', query.sleeping),
    flagPredicate('devFlapping', query.flapping),
    query.q ? searchPredicate : undefined,
    randomPredicate(query.random),
    query.site === undefined ? undefined : 'devSite = @site',
  ].filter((c): c is string => c !== undefined);
  const where = conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`;
  const direction = query.order === 'desc' ? 'DESC' : 'ASC';
  const sort = query.sort ?? 'devMac';
  const order =
    sort === 'devMac'
      ? `devMac ${direction}`
      : sort === 'devName'
        ? `${unnamedLast}, ${naturalKeyFunction}(devName) ${direction}, devMac ${direction}`
        : `${orderTerm(sort)} ${direction}, devMac ${direction}`;
  return {
    page: `SELECT ${columnList} FROM Devices ${where} ORDER BY ${order} LIMIT @limit OFFSET @offset`,
    total: `SELECT COUNT(*) FROM Devices ${where}`,
    // Every MAC of the list in the page's order: what the list cache keeps (one walk, no columns).
    order: `SELECT devMac FROM Devices ${where} ORDER BY ${order}`,
  };
}

/** A LIKE pattern matching `text` anywhere, with `%`, `_` and `\` in it taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The bound parameters of a search (none without `q`). */
export function searchParams(q: string | undefined): Record<string, string> {
  if (!q) return {};
  return { q: containsPattern(q), qmac: containsPattern(macSearchText(q)) };
}

/** The bound parameters of a list shape: the search's and the site's. */
export function listParams(query: DeviceListQuery): Record<string, string> {
  const search = searchParams(query.q);
  return query.site === undefined ? search : { ...search, site: query.site };
}

/**
 * The SQL functions the list statements call (the name sort's natural key), on one connection:
 * every connection that prepares them registers these first (the store, the bench's ceiling).
 */
export function registerListFunctions(db: Database): void {
  db.function(naturalKeyFunction, { deterministic: true }, (name: unknown) =>
    typeof name === 'string' ? naturalKey(name) : null,
  );
}
