/**
 * The query behind GET /devices: which devices (a devStatus or a group of the status counters, the
 * presence flags devSleeping and devFlapping, and a text search), in which order, one page. Sort
 * columns come from an allow-list checked against the field catalogue; the SQLite store turns a
 * query into SQL (src/store/sqlite/list-sql.ts), the search text only ever as a bound parameter.
 */
import { computedFields, fieldsByName } from './catalogue.js';
import { deviceGroups, deviceStatuses, type DeviceGroup, type DeviceStatus } from './status.js';

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

/** The text columns a search looks in, besides devMac (search-index.ts reads the same ones). */
export const searchColumns = ['devName', 'devLastIP', 'devVendor', 'devOwner'] as const;
export type SearchColumn = (typeof searchColumns)[number];

/** The text a search looks for in devMac: '-' read as ':' (a MAC written with dashes). */
export function macSearchText(q: string): string {
  return q.replace(/-/g, ':');
}

/** A list shape that is a search and nothing else, in MAC order (search-index.ts answers it). */
export function isPlainSearch(query: DeviceListQuery): query is DeviceListQuery & { readonly q: string } {
  return (
    typeof query.q === 'string' &&
    query.q !== '' &&
    (query.status === undefined || query.status === 'all') &&
    query.sleeping === undefined &&
    query.flapping === undefined &&
    query.random === undefined &&
    query.site === undefined &&
    (query.sort === undefined || query.sort === 'devMac')
  );
}
