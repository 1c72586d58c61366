/**
 * The query behind GET /devices: which devices (a devStatus or a group of the status counters, the
 * presence flags devSleeping and devFlapping, and a text search), in which order, one page. Every piece of SQL text comes from constants here: the
 * status predicates of status.ts, column names from an allow-list checked against the field
 * catalogue, and the search text only ever as a bound parameter (LIKE with its wildcards escaped).
 */
import { computedFields, fieldsByName } from './catalogue.js';
import {
  deviceGroupSql,
  deviceGroups,
  deviceStatuses,
  deviceStatusSql,
  presenceFlagSql,
  type DeviceGroup,
  type DeviceStatus,
} from './status.js';

/** What `?status=` accepts: a devStatus (archived devices included), a counter group, or `all`. */
export type DeviceListStatus = DeviceStatus | DeviceGroup | 'all';
export const deviceListStatuses: readonly DeviceListStatus[] = [...deviceStatuses, ...deviceGroups, 'all'];

/** Columns `?sort=` accepts, in the order the docs list them. */
export const sortColumns = [
  'devName',
  'devMac',
  'devLastIP',
  'devVendor',
  'devOwner',
  'devType',
  'devGroup',
  'devLocation',
  'devSite',
  'devFavorite',
  'devFirstConnection',
  'devLastConnection',
  'devStatus',
] as const;
export type SortColumn = (typeof sortColumns)[number];
export type SortOrder = 'asc' | 'desc';

// The allow-list may only name catalogue fields: a typo here fails at start, never in a query.
for (const name of sortColumns)
  if (!fieldsByName.has(name) && !Object.hasOwn(computedFields, name))
    throw new Error(`sort column '${name}' is not in the field catalogue`);

/** Longest search text accepted. */
export const maxSearchLength = 100;

export interface DeviceListQuery {
  readonly status?: DeviceListStatus;
  /** true: only devices with devSleeping 1; false: only those with 0. */
  readonly sleeping?: boolean;
  /** true: only devices with devFlapping 1; false: only those with 0. */
  readonly flapping?: boolean;
  /** Text searched (case-insensitively, as a substring) in name, MAC, IP, vendor and owner. */
  readonly q?: string;
  readonly sort?: SortColumn;
  readonly order?: SortOrder;
  /** 1: only devices whose devMac is random (devRandomMac); 0: only the others. */
  readonly random?: 0 | 1;
  /** Only devices of this site (devSite, exactly; '' those with none). */
  readonly site?: string;
}

/**
 * The name sort's rule, one for every list: natural order ("host2" before "host10", "Printer 164"
 * before "Printer 1069"), case ignored. The SQL calls it as `naturalKeyFunction(devName)` (the
 * store registers `naturalKey` under that name): each run of digits is led by its length, so
 * comparing keys as text compares the numbers.
 */
export const naturalKeyFunction = 'netkeep_natural_key';

export function naturalKey(name: string): string {
  return name.toLowerCase().replace(/\d+/g, (run) => {
    const digits = run.replace(/^0+(?=\d)/, '');
    return String(digits.length).padStart(5, '0') + digits;
  });
}

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
const searchPredicate = `(devName LIKE @q ESCAPE '\\' OR devMac LIKE @qmac ESCAPE '\\'
  OR devLastIP LIKE @q ESCAPE '\\' OR devVendor LIKE @q ESCAPE '\\' OR devOwner LIKE @q ESCAPE '\\')`;

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
  return { q: containsPattern(q), qmac: containsPattern(q.replace(/-/g, ':')) };
}

/** The bound parameters of a list shape: the search's and the site's. */
export function listParams(query: DeviceListQuery): Record<string, string> {
  const search = searchParams(query.q);
  return query.site === undefined ? search : { ...search, site: query.site };
}
