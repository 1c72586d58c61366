/**
 * Path and query-string parameters shared by the device routes: the path `<mac>`, `period` (GET /device/<mac> and the history lists),
 * `offset`/`limit` (every list) and `status`, `q`, `sort`, `order` (GET /devices). Each has one TypeBox schema (for
 * validation of the JSON type and for OpenAPI) and one parser that turns the text into a value or a
 * `invalid` outcome (a 400) naming the parameter and what it accepts. Query values arrive as text (the app never coerces
 * types), so the numbers are parsed here, digits only: `limit=1;DROP TABLE Devices`, `1e3`, `-1`,
 * ` 5` and `0x10` are all 400s.
 */
import { Type } from '@sinclair/typebox';
import { stringEnum } from '../enum-schema.js';
import { DomainError } from '../errors.js';
import { periods, type Period } from '../time.js';
import { integerTextPattern, macPattern, normalizeMac } from '../validation.js';
import type { DeviceStore, Page } from '../store/devices.js';
import {
  deviceListStatuses,
  maxSearchLength,
  sortColumns,
  type DeviceListStatus,
  type SortColumn,
  type SortOrder,
} from './list-query.js';
import { deviceGroups, deviceStatuses } from './status.js';

export const MacParams = Type.Object({
  mac: Type.String({
    pattern: macPattern,
    description:
      'MAC address: aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff (any case), aabb.ccdd.eeff or aabbccddeeff.',
  }),
});

/** Canonical MAC of a path segment or a body field, or a 400 naming what was given (and where). */
export function requireMac(raw: string, field?: string): string {
  const mac = normalizeMac(raw);
  if (mac === null) {
    const where = field === undefined ? '' : `Field '${field}' `;
    throw new DomainError('invalid', `${where}'${raw.slice(0, 64)}' is not a MAC address.`, {
      code: 'INVALID_MAC',
    });
  }
  return mac;
}

/** Canonical MAC of the path's `<mac>`, or a 400. */
export function pathMac(raw: string): string {
  return requireMac(raw);
}

/**
 * The device a path's `<mac>` names: its canonical MAC resolved through the aliases (a device is
 * found by any of its MACs), or a 400. The one place a `/device/<mac>` path becomes a devMac.
 */
export function deviceMac(raw: string, devices: Pick<DeviceStore, 'resolveMac'>): Promise<string> {
  return devices.resolveMac(requireMac(raw));
}

export function notFound(mac: string): DomainError {
  return new DomainError('not-found', `Device ${mac} not found.`, { code: 'DEVICE_NOT_FOUND' });
}

export const periodNames = Object.keys(periods) as Period[];

export const periodParam = stringEnum(periodNames, `Period: ${periodNames.join(', ')} (default all).`);

export const PeriodQuery = Type.Object({ period: Type.Optional(periodParam) });

/** `?period=` as a Period (default `all`), or a 400 naming the allowed values. */
export function parsePeriod(raw: string | undefined): Period {
  if (raw === undefined) return 'all';
  if ((periodNames as string[]).includes(raw)) return raw as Period;
  throw new DomainError('invalid', `period must be one of: ${periodNames.join(', ')}.`, {
    code: 'INVALID_PERIOD',
  });
}

/** Page size when `limit` is not given, and the largest one accepted. */
export const defaultLimit = 100;
export const maxLimit = 1000;
/** Largest offset accepted: far beyond any table, small enough to stay an exact integer. */
export const maxOffset = 1_000_000_000;

const integerText = new RegExp(integerTextPattern);

export const pagingParams = {
  offset: Type.Optional(
    Type.String({
      pattern: integerTextPattern,
      description: `Rows to skip: an integer from 0 to ${maxOffset} (default 0).`,
    }),
  ),
  limit: Type.Optional(
    Type.String({
      pattern: integerTextPattern,
      description: `Rows to return: an integer from 1 to ${maxLimit} (default ${defaultLimit}).`,
    }),
  ),
};

function parseInteger(
  name: string,
  raw: string | undefined,
  min: number,
  max: number,
  fallback: number,
): number {
  if (raw === undefined) return fallback;
  const value = integerText.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max))
    throw new DomainError('invalid', `${name} must be an integer from ${min} to ${max}.`, {
      code: name === 'offset' ? 'INVALID_OFFSET' : 'INVALID_LIMIT',
    });
  return value;
}

/**
 * `?offset=&limit=` of GET /devices: as parsePage, but no `limit` means every device from the
 * offset on (limit null), as NetAlertX answers and inventory scripts written for it expect.
 */
export function parseDeviceListPage(query: { readonly offset?: string; readonly limit?: string }): {
  offset: number;
  limit: number | null;
} {
  if (query.limit === undefined) return { offset: parsePage(query).offset, limit: null };
  return parsePage(query);
}

/** `?offset=&limit=` as a Page, or a 400 naming the parameter and its range. */
export function parsePage(query: { readonly offset?: string; readonly limit?: string }): Page {
  return {
    offset: parseInteger('offset', query.offset, 0, maxOffset, 0),
    limit: parseInteger('limit', query.limit, 1, maxLimit, defaultLimit),
  };
}

export const statusParam = stringEnum(
  deviceListStatuses,
  `A devStatus (${deviceStatuses.join(', ')}: every device with it, archived ones included) or a ` +
    `group of the status counters (${deviceGroups.join(', ')}; see GET /devices/totals), or all. Exact spelling.`,
);

/** `?status=` as a list status (undefined: no filter), or a 400 naming the allowed values. */
export function parseStatus(raw: string | undefined): DeviceListStatus | undefined {
  if (raw === undefined) return undefined;
  if ((deviceListStatuses as readonly string[]).includes(raw)) return raw as DeviceListStatus;
  throw new DomainError('invalid', `status must be one of: ${deviceListStatuses.join(', ')}.`, {
    code: 'INVALID_STATUS',
  });
}

/** `?sleeping=` / `?flapping=`: 1 keeps the devices with the flag, 0 those without. */
const flagFilterValues = ['0', '1'] as const;
export const sleepingParam = stringEnum(
  flagFilterValues,
  '1: only sleeping devices (devSleeping 1); 0: only the others.',
  'INVALID_FLAG_FILTER',
);
export const flappingParam = stringEnum(
  flagFilterValues,
  '1: only flapping devices (devFlapping 1); 0: only the others.',
  'INVALID_FLAG_FILTER',
);

/** A validated `?sleeping=` / `?flapping=` value as a filter (undefined: none). */
export function parseFlagFilter(raw: '0' | '1' | undefined): boolean | undefined {
  return raw === undefined ? undefined : raw === '1';
}

export const searchParam = Type.String({
  description: `Text searched, ignoring case, in name, MAC, IP, vendor and owner (at most ${maxSearchLength} characters).`,
});
export const sortParam = stringEnum(
  sortColumns,
  `Sort column: ${sortColumns.join(', ')} (default devMac).`,
  'INVALID_SORT',
);
const sortOrders = ['asc', 'desc'] as const;
export const orderParam = stringEnum(sortOrders, 'asc (default) or desc.', 'INVALID_ORDER');

/** `?q=` trimmed (undefined when empty), or a 400 when too long. */
export function parseSearch(raw: string | undefined): string | undefined {
  const text = raw?.trim();
  if (!text) return undefined;
  if (text.length > maxSearchLength)
    throw new DomainError('invalid', `q must be at most ${maxSearchLength} characters.`, {
      code: 'INVALID_SEARCH',
    });
  return text;
}

export const siteParam = Type.String({
  maxLength: 64,
  description:
    "Only devices of this site (devSite, exactly: the SITE_NAME of the hub's own scans, or a probe's site; empty: devices with no site).",
});

export const randomParam = stringEnum(
  ['0', '1'] as const,
  '1: only devices whose devMac is random (devRandomMac 1); 0: only the others.',
  'INVALID_RANDOM',
);

/** `?random=` as 0 or 1 (undefined: no filter), or a 400. */
export function parseRandom(raw: string | undefined): 0 | 1 | undefined {
  if (raw === undefined) return undefined;
  if (raw === '0' || raw === '1') return raw === '1' ? 1 : 0;
  throw new DomainError('invalid', 'random must be 0 or 1.', { code: 'INVALID_RANDOM' });
}

/** `?sort=&order=`, or a 400 naming the parameter and the allowed values. */
export function parseSort(query: { readonly sort?: string; readonly order?: string }): {
  sort?: SortColumn;
  order?: SortOrder;
} {
  const { sort, order } = query;
  if (sort !== undefined && !(sortColumns as readonly string[]).includes(sort))
    throw new DomainError('invalid', `sort must be one of: ${sortColumns.join(', ')}.`, {
      code: 'INVALID_SORT',
    });
  if (order !== undefined && order !== 'asc' && order !== 'desc')
    throw new DomainError('invalid', 'order must be asc or desc.', { code: 'INVALID_ORDER' });
  return { sort: sort as SortColumn | undefined, order };
}
