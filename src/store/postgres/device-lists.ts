/**
 * GET /devices on PostgreSQL (`DeviceStore.listDevices`, `listOrder`, `listItems`, `searchTexts`,
 * ../devices.ts): the SQLite store's answers (src/store/sqlite/list-sql.ts), row for row and in the
 * same order, ties included. How each of SQLite's rules is kept here:
 * - text compares by bytes: every column is COLLATE "C" (SQLite's BINARY);
 * - COLLATE NOCASE (sorts) and LIKE (search) fold ASCII letters only: lower() of a "C" text folds
 *   only those, and the search patterns are folded the same way in JavaScript;
 * - SQLite puts NULL first in an ascending order and last in a descending one: NULLS FIRST/LAST;
 * - the name sort's natural key is a JavaScript function in SQLite (registerListFunctions): here the
 *   filtered MACs and names are read and sorted with that same function, compared as SQLite compares
 *   text (by UTF-8 bytes, i.e. by code point), so no second implementation of the key can drift;
 * - a page and its total are read in one snapshot (REPEATABLE READ), like SQLite's read transaction.
 * Every piece of SQL text comes from constants here and the catalogue's column names; the search
 * text and the site are only ever bound parameters.
 */
import type { PoolClient, QueryResultRow } from 'pg';
import { fieldsByName, storedFields, type DeviceRow } from '../../devices/catalogue.js';
import {
  macSearchText,
  naturalKey,
  searchColumns,
  type DeviceListQuery,
  type DeviceListStatus,
  type SortColumn,
} from '../../devices/list-query.js';
import { deviceStatuses, type DeviceGroup, type DeviceStatus } from '../../devices/status.js';
import type { DeviceListItem, Page, PageResult, SearchTexts } from '../devices.js';
import { deviceListItemOf } from '../sqlite/devices.js';
import { containsPattern } from '../sqlite/list-sql.js';
import type { PostgresPool } from './pool.js';
import { groupPredicate, presenceFlagColumns, presenceFlagSql, statusPredicate } from './status-sql.js';
import { holdsNul } from './text.js';

const columnList = storedFields.map((f) => `"${f.name}"`).join(', ');

const flagSql = presenceFlagSql('"Devices"');

/** A list item's columns: every stored field, then the flags as 0/1. */
const itemColumns = `${columnList}, ${presenceFlagColumns('"Devices"')}`;

/** devRandomMac: the second hex digit of the canonical devMac has bit 0x2 set. */
const randomMacSql = `substr("devMac", 2, 1) IN ('2', '3', '6', '7', 'a', 'b', 'e', 'f')`;

/** SQLite's NOCASE and LIKE fold ASCII letters only; so does this (toLowerCase would fold more). */
const foldAscii = (text: string): string => text.replace(/[A-Z]/g, (c) => c.toLowerCase());

function listStatusPredicate(status: DeviceListStatus | undefined): string | undefined {
  if (status === undefined || status === 'all') return undefined;
  if ((deviceStatuses as readonly string[]).includes(status)) return statusPredicate(status as DeviceStatus);
  return groupPredicate(status as DeviceGroup);
}

/** The WHERE clause of a query and its bound parameters ($1...). */
function filterOf(query: DeviceListQuery): { readonly where: string; readonly params: string[] } {
  const params: string[] = [];
  const param = (value: string): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const flag = (name: keyof typeof flagSql, wanted: boolean | undefined): string | undefined =>
    wanted === undefined ? undefined : wanted ? flagSql[name] : `NOT ${flagSql[name]}`;
  let search: string | undefined;
  // A value holding U+0000 matches no text PostgreSQL stores, and is refused as a parameter.
  if (query.q && holdsNul(query.q)) search = 'FALSE';
  else if (query.q) {
    const q = param(foldAscii(containsPattern(query.q)));
    const qmac = param(foldAscii(containsPattern(macSearchText(query.q))));
    search = `(lower("devMac") LIKE ${qmac} ESCAPE '\\' OR ${searchColumns
      .map((column) => `lower("${column}") LIKE ${q} ESCAPE '\\'`)
      .join(' OR ')})`;
  }
  const conditions = [
    listStatusPredicate(query.status),
    flag('devSleeping', query.sleeping),
    flag('devFlapping', query.flapping),
    search,
    query.random === undefined ? undefined : query.random === 1 ? randomMacSql : `NOT ${randomMacSql}`,
    query.site === undefined
      ? undefined
      : holdsNul(query.site)
        ? 'FALSE'
        : `"devSite" = ${param(query.site)}`,
  ].filter((c): c is string => c !== undefined);
  return { where: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, params };
}

/** The ORDER BY of every sort but the name's (which is sorted in JavaScript, see `byName`). */
function orderSql(sort: Exclude<SortColumn, 'devName'>, descending: boolean): string {
  const direction = descending ? 'DESC NULLS LAST' : 'ASC NULLS FIRST';
  const mac = `"devMac" ${descending ? 'DESC' : 'ASC'}`;
  if (sort === 'devMac') return mac;
  let term: string;
  if (sort === 'devStatus')
    term = `(CASE WHEN ${statusPredicate('On-line')} THEN 'On-line' WHEN ${statusPredicate('Down')} THEN 'Down' ELSE 'Off-line' END) COLLATE "C"`;
  else term = fieldsByName.get(sort)?.kind === 'text' ? `lower("${sort}")` : `"${sort}"`;
  return `${term} ${direction}, ${mac}`;
}

/**
 * SQLite's BINARY order of two texts: by UTF-8 bytes, which is by code point. JavaScript compares
 * UTF-16 code units, which differs only where a surrogate pair (U+10000 and up) meets U+E000-U+FFFF.
 */
export function compareText(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

const surrogate = /[\ud800-\udfff]/;
const compareNative = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface NameRow {
  readonly devMac: string;
  readonly devName: string;
}

/**
 * SQLite's `ORDER BY <unnamed>, netkeep_natural_key(devName) <dir>, devMac <dir>`: devices without
 * a name last in either direction, then the natural key, then the MAC.
 */
export function byName(rows: readonly NameRow[], descending: boolean): string[] {
  const sign = descending ? -1 : 1;
  const keyed = rows.map((row) => ({
    mac: row.devMac,
    unnamed: row.devName === '' || row.devName === '(unknown)' ? 1 : 0,
    key: naturalKey(row.devName),
  }));
  // Without a surrogate pair in any key, JavaScript's own comparison is SQLite's (and faster).
  const compare = keyed.some((row) => surrogate.test(row.key)) ? compareText : compareNative;
  keyed.sort((a, b) => a.unnamed - b.unnamed || sign * compare(a.key, b.key) || sign * compare(a.mac, b.mac));
  return keyed.map((row) => row.mac);
}

const searchTextColumns = `"devMac", ${searchColumns.map((c) => `"${c}"`).join(', ')}`;

/** Runs one statement: on the pool, or on a transaction's connection. */
type Run = <R extends QueryResultRow>(sql: string, params: readonly unknown[]) => Promise<R[]>;

const on =
  (client: PoolClient): Run =>
  async <R extends QueryResultRow>(sql: string, params: readonly unknown[]) =>
    (await client.query<R>(sql, [...params])).rows;

/** The device lists of the PostgreSQL device store (`PostgresDeviceStore` delegates to it). */
export class PostgresDeviceLists {
  private readonly run: Run;

  constructor(private readonly store: PostgresPool) {
    this.run = (sql, params) => store.query(sql, params);
  }

  async listDevices(query: DeviceListQuery, page: Page): Promise<PageResult<DeviceListItem>> {
    const { where, params } = filterOf(query);
    return this.store.transaction(async (client) => {
      const run = on(client);
      if (query.sort === 'devName') {
        const macs = await nameOrder(run, query, where, params);
        const items = await listItems(run, macs.slice(page.offset, page.offset + page.limit));
        return { items: items.filter((item) => item !== undefined), total: macs.length };
      }
      const n = params.length;
      const rows = await run<DeviceRow & QueryResultRow>(
        `SELECT ${itemColumns} FROM "Devices" ${where}
         ORDER BY ${orderSql(query.sort ?? 'devMac', query.order === 'desc')} LIMIT $${n + 1} OFFSET $${n + 2}`,
        [...params, page.limit, page.offset],
      );
      const total = await run<{ n: number }>(`SELECT count(*)::bigint AS n FROM "Devices" ${where}`, params);
      return { items: rows.map(deviceListItemOf), total: total[0]?.n ?? 0 };
    }, 'snapshot');
  }

  async listOrder(query: DeviceListQuery): Promise<string[]> {
    const { where, params } = filterOf(query);
    if (query.sort === 'devName') return nameOrder(this.run, query, where, params);
    const rows = await this.run<{ devMac: string }>(
      `SELECT "devMac" FROM "Devices" ${where} ORDER BY ${orderSql(query.sort ?? 'devMac', query.order === 'desc')}`,
      params,
    );
    return rows.map((row) => row.devMac);
  }

  listItems(macs: readonly string[]): Promise<(DeviceListItem | undefined)[]> {
    return listItems(this.run, macs);
  }

  async searchTexts(macs?: readonly string[]): Promise<SearchTexts[]> {
    if (macs === undefined)
      return this.run<SearchTexts & QueryResultRow>(
        `SELECT ${searchTextColumns} FROM "Devices" ORDER BY "devMac"`,
        [],
      );
    const rows = await this.run<SearchTexts & QueryResultRow>(
      `SELECT ${searchTextColumns} FROM "Devices" WHERE "devMac" = ANY($1::text[])`,
      [macs],
    );
    const byMac = new Map(rows.map((row) => [row.devMac, row]));
    return macs.map((mac) => byMac.get(mac)).filter((row) => row !== undefined);
  }
}

/** The filtered MACs in the name sort's order. */
async function nameOrder(
  run: Run,
  query: DeviceListQuery,
  where: string,
  params: readonly string[],
): Promise<string[]> {
  const rows = await run<NameRow & QueryResultRow>(
    `SELECT "devMac", "devName" FROM "Devices" ${where}`,
    params,
  );
  return byName(rows, query.order === 'desc');
}

/** The list items of `macs`, in their order; undefined for a MAC that is no device. */
async function listItems(run: Run, macs: readonly string[]): Promise<(DeviceListItem | undefined)[]> {
  if (macs.length === 0) return [];
  const rows = await run<DeviceRow & QueryResultRow>(
    `SELECT ${itemColumns} FROM "Devices" WHERE "devMac" = ANY($1::text[])`,
    [macs],
  );
  const byMac = new Map(rows.map((row) => [row.devMac as string, deviceListItemOf(row)]));
  return macs.map((mac) => byMac.get(mac));
}
