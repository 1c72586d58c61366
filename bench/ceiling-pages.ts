/**
 * The pages of GET /devices the devices bench asks for, which the ceiling serves from memory: a
 * page of 100 at every multiple of 100, in MAC order (`/devices?limit=100&offset=…`) and in the
 * console's own order (`status=my`, sorted by name, as the console's device list asks).
 */
import type { DeviceListQuery } from '../src/devices/list-query.js';

export interface CeilingPage {
  readonly path: string;
  readonly query: DeviceListQuery;
  readonly offset: number;
  readonly limit: number;
}

export const pageSize = 100;

/** The two page shapes: the query string before `&limit=`, and the list query it means. */
export const pageShapes = [
  { name: 'MAC order', prefix: '/devices?', query: {} },
  {
    name: 'console: status=my, by name',
    prefix: '/devices?status=my&sort=devName&order=asc&',
    query: { status: 'my', sort: 'devName', order: 'asc' },
  },
] as const satisfies readonly { name: string; prefix: string; query: DeviceListQuery }[];

export function pagePath(prefix: string, offset: number): string {
  return `${prefix}limit=${pageSize}&offset=${offset}`;
}

/** Every page of both shapes for a list of `devices` devices. */
export function ceilingPages(devices: number): CeilingPage[] {
  const pages: CeilingPage[] = [];
  for (const shape of pageShapes)
    for (let offset = 0; offset < devices; offset += pageSize)
      pages.push({ path: pagePath(shape.prefix, offset), query: shape.query, offset, limit: pageSize });
  return pages;
}
