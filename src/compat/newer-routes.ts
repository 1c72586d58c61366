/**
 * NetAlertX's 2026 REST additions that dashboards and AI assistants call: device search, the latest
 * and the favourite devices, the network topology, recent and last events, and the Glance widget's
 * `query_json.php?file=table_devices.json`. Shapes are NetAlertX's (the file each route matched is
 * named in its schema); every route is thin: it reads through the device repository, the event log
 * or the compat store, the same modules as GET /devices, the console's event log and the export.
 * `POST /device/open_ports` is in src/watch/routes.ts, beside GET /device/<mac>/ports.
 */
import { Readable } from 'node:stream';
import { Type, type Static } from '@sinclair/typebox';
import { DomainError } from '../errors.js';
import type { App } from '../http/app.js';
import { directRoute } from '../http/direct-routes.js';
import { commonErrors, ErrorRef, optionalBody } from '../http/schemas.js';
import { DeviceListItemSchema, rowToJson } from '../devices/catalogue.js';
import type { EventLogStore } from '../store/event-log.js';
import type { DeviceListQuery } from '../devices/list-query.js';
import type { DeviceListItem, DeviceStore } from '../store/devices.js';
import { DeviceListCache } from '../devices/list-cache.js';
import { deviceStatus } from '../devices/status.js';
import { integerTextPattern, normalizeMac } from '../validation.js';
import { deviceRows } from './routes.js';
import type { CompatStore } from '../store/compat.js';

export interface NewerRoutesOptions {
  readonly repository: DeviceStore;
  readonly eventLog: EventLogStore;
  readonly store: CompatStore;
}

const tags = ['netalertx'];
/** NetAlertX's DeviceSearchRequest bounds (server/api_server/openapi/schemas.py). */
const maxQueryLength = 256;
const maxSearchResults = 500;
const defaultSearchResults = 50;
/** NetAlertX's RecentEventsRequest bounds (same file). */
const maxHours = 720;
const maxRecentEvents = 1000;
const defaultRecentEvents = 100;
const lastEventsCount = 10;
/** Devices per page of a device list; allOf reads 32 pages at a time (list items are small). */
const pageSize = 16;
/** The one file `query_json.php` serves (NetAlertX's api/table_devices.json). */
const deviceTableFile = 'table_devices.json';

const DeviceListRef = Type.Array(Type.Ref('DeviceListItem'));

const noDevices = (): DomainError =>
  new DomainError('not-found', 'No devices found.', { code: 'NO_DEVICES_FOUND' });

const EventsAnswer = {
  success: Type.Literal(true),
  count: Type.Integer({ description: 'Events in this answer.' }),
  events: Type.Array(
    Type.Object(
      {},
      {
        additionalProperties: true,
        description: 'An Events row (eve_* columns, ISO times) with devName, as GET /events lists them.',
      },
    ),
  ),
};

const RecentBody = Type.Object(
  {
    hours: Type.Optional(
      Type.Integer({ minimum: 1, maximum: maxHours, description: 'Hours to look back (default 24).' }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: maxRecentEvents,
        description: `Most events returned, newest first (default ${defaultRecentEvents}).`,
      }),
    ),
  },
  { additionalProperties: false },
);

const RecentQuery = Type.Object(
  {
    hours: Type.Optional(
      Type.String({ pattern: integerTextPattern, description: `1 to ${maxHours} (default 24).` }),
    ),
    limit: Type.Optional(
      Type.String({ pattern: integerTextPattern, description: `1 to ${maxRecentEvents} (default 100).` }),
    ),
  },
  { additionalProperties: false },
);

/** A query-string integer in range, or a 400 naming the parameter. */
function textInteger(
  raw: string | undefined,
  name: 'hours' | 'limit',
  max: number,
  fallback: number,
): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new DomainError('invalid', `${name} must be an integer from 1 to ${max}.`, {
      code: name === 'hours' ? 'INVALID_HOURS' : 'INVALID_LIMIT',
    });
  return value;
}

/** POST /devices/search's body. */
const SearchBody = Type.Object(
  {
    query: Type.String({
      minLength: 1,
      maxLength: maxQueryLength,
      description: 'MAC (any form), or part of a name, IP, vendor or owner.',
    }),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: maxSearchResults,
        description: `Most devices returned, in MAC order (default ${defaultSearchResults}).`,
      }),
    ),
  },
  { additionalProperties: false },
);

/** Every item of a device list, read a batch at a time. */
async function allOf(
  repository: DeviceStore,
  query: DeviceListQuery,
  limit: number,
): Promise<DeviceListItem[]> {
  const items: DeviceListItem[] = [];
  while (items.length < limit) {
    const page = await repository.listDevices(query, {
      offset: items.length,
      limit: Math.min(pageSize * 32, limit - items.length),
    });
    items.push(...page.items);
    if (page.items.length === 0 || items.length >= page.total) break;
  }
  return items;
}

export default async function newerCompatRoutes(app: App, opts: NewerRoutesOptions): Promise<void> {
  const { repository, eventLog, store } = opts;
  // The search's answers from memory (list-cache.ts): the matches from the search index, each
  // device's list item as its kept JSON text, and the whole answer kept as bytes until a device
  // changes. An MCP client asking search_devices again and again costs a lookup.
  const lists = new DeviceListCache(repository);
  app.addSchema(DeviceListItemSchema);

  // NetAlertX: server/api_server/api_server_start.py (api_devices_search) and DeviceInstance.search
  // in server/models/device_instance.py: a MAC answers that device, otherwise a substring of MAC,
  // name or IP; nothing found is a 404.
  // The search is a direct route (http/direct-routes.ts): MCP's search_devices calls its logic
  // without a second HTTP request, validated by this route's own schema.
  const search = directRoute(async (body: Static<typeof SearchBody>) => {
    const text = body.query.trim();
    if (text === '') throw new DomainError('invalid', 'query must not be blank.', { code: 'INVALID_SEARCH' });
    const q = normalizeMac(text) ?? text;
    // A plain search in MAC order: the SQL search would scan every row, twice (page, total).
    const answer = await lists.answer({ q }, 0, body.limit ?? defaultSearchResults, async ({ items }) => {
      const texts: string[] = [];
      for await (const item of items) texts.push(item);
      if (texts.length === 0) throw noDevices();
      return `{"success":true,"devices":[${texts.join(',')}]}`;
    });
    return { status: 200, type: 'application/json; charset=utf-8', body: answer };
  });
  app.post(
    '/devices/search',
    {
      config: search.config,
      schema: {
        tags,
        summary:
          'Devices whose MAC, name, IP, vendor or owner contains the query (a whole MAC in any form: that device): {success, devices}. 404 when none.',
        body: SearchBody,
        response: {
          200: Type.Object({ success: Type.Literal(true), devices: DeviceListRef }),
          ...commonErrors,
          404: ErrorRef,
        },
      },
    },
    search.handler,
  );

  // NetAlertX: api_devices_latest (api_server_start.py), DeviceInstance.getLatest: the device first
  // seen last, as a one-item array; 404 when there are no devices.
  app.get(
    '/devices/latest',
    {
      schema: {
        tags,
        summary: 'The device first seen most recently (latest devFirstConnection), as a one-item array.',
        response: { 200: DeviceListRef, 403: ErrorRef, 404: ErrorRef },
      },
    },
    async () => {
      const page = await repository.listDevices(
        { sort: 'devFirstConnection', order: 'desc' },
        { offset: 0, limit: 1 },
      );
      if (page.items.length === 0) throw noDevices();
      return page.items;
    },
  );

  // NetAlertX: api_devices_favorite (api_server_start.py), DeviceInstance.getFavorite. NetAlertX
  // nests the list in a second array, which its own response schema (DeviceListResponse) does not
  // describe; netkeep answers the flat array its schema describes.
  app.get(
    '/devices/favorite',
    {
      schema: {
        tags,
        summary: 'Favourite devices that are not archived (the favorites counter group), in MAC order.',
        response: { 200: DeviceListRef, 403: ErrorRef, 404: ErrorRef },
      },
    },
    async () => {
      const devices = await allOf(repository, { status: 'favorites' }, Number.MAX_SAFE_INTEGER);
      if (devices.length === 0) throw noDevices();
      return devices;
    },
  );

  // NetAlertX: api_devices_network_topology (api_server_start.py), DeviceInstance.getNetworkTopology
  // and NetworkTopologyResponse (openapi/schemas.py): a node per device, a link per devParentMAC.
  app.get(
    '/devices/network/topology',
    {
      schema: {
        tags,
        summary:
          'The network tree: {success, nodes: [{id, name, vendor}], links: [{source, target, port}]}, a link from each devParentMAC to its child.',
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            nodes: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), vendor: Type.String() })),
            links: Type.Array(
              Type.Object({
                source: Type.String({ description: 'devParentMAC.' }),
                target: Type.String({ description: 'devMac of the child.' }),
                port: Type.Union([Type.Integer(), Type.Null()], { description: 'devParentPort.' }),
              }),
            ),
          }),
          403: ErrorRef,
        },
      },
    },
    async () => {
      const nodes: { id: string; name: string; vendor: string }[] = [];
      const links: { source: string; target: string; port: number | null }[] = [];
      const rows = deviceRows(store);
      for await (const row of rows) {
        const device = rowToJson(row);
        const id = String(device.devMac);
        const text = (value: unknown): string => (typeof value === 'string' ? value : '');
        nodes.push({ id, name: text(device.devName), vendor: text(device.devVendor) });
        const parent = device.devParentMAC;
        if (typeof parent === 'string' && parent !== '') {
          const port = device.devParentPort;
          links.push({ source: parent, target: id, port: typeof port === 'number' ? port : null });
        }
      }
      return { success: true as const, nodes, links };
    },
  );

  const recentEvents = async (hours: number, limit: number) => {
    const since = new Date(Date.now() - hours * 3_600_000);
    const events = (await eventLog.list({ since }, { offset: 0, limit })).items;
    return { success: true as const, hours, count: events.length, events };
  };
  const recentSchema = {
    tags,
    summary:
      'Events of the last `hours` (default 24), newest first, at most `limit` (default 100): {success, hours, count, events}.',
    response: {
      200: Type.Object({ ...EventsAnswer, hours: Type.Integer() }),
      ...commonErrors,
    },
  };
  // NetAlertX: api_events_default_24h / api_events_recent (api_server_start.py), EventInstance
  // .get_by_hours (server/models/event_instance.py); RecentEventsRequest bounds hours and limit.
  app.get('/events/recent', { schema: { ...recentSchema, querystring: RecentQuery } }, async (request) =>
    recentEvents(
      textInteger(request.query.hours, 'hours', maxHours, 24),
      textInteger(request.query.limit, 'limit', maxRecentEvents, defaultRecentEvents),
    ),
  );
  app.post(
    '/events/recent',
    { schema: { ...recentSchema, body: RecentBody }, preValidation: optionalBody },
    async (request) => recentEvents(request.body.hours ?? 24, request.body.limit ?? defaultRecentEvents),
  );

  // NetAlertX: get_last_events (api_server_start.py), EventInstance.get_last_n(10).
  const lastSchema = {
    tags,
    summary: 'The 10 newest events: {success, count, events}.',
    response: { 200: Type.Object(EventsAnswer), ...commonErrors },
  };
  const lastEvents = async () => {
    const events = (await eventLog.list({}, { offset: 0, limit: lastEventsCount })).items;
    return { success: true as const, count: events.length, events };
  };
  app.get('/events/last', { schema: lastSchema }, async () => lastEvents());
  app.post(
    '/events/last',
    {
      schema: {
        ...lastSchema,
        body: Type.Object({}, { additionalProperties: false }),
      },
      preValidation: optionalBody,
    },
    async () => lastEvents(),
  );

  // NetAlertX: front/php/server/query_json.php serves files of its api/ directory; the Glance widget
  // reads `table_devices.json` ({data: [device rows with devStatus]}). netkeep builds that one answer
  // from the store; there is no file and no path: any other name is a 404 and nothing is read.
  app.get(
    '/php/server/query_json.php',
    {
      schema: {
        tags,
        summary: `NetAlertX's PHP path for dashboard widgets: ?file=${deviceTableFile} answers {data: [every device with devStatus]}. Any other file is a 404.`,
        querystring: Type.Object(
          { file: Type.String({ maxLength: 256, description: `Only ${deviceTableFile}.` }) },
          { additionalProperties: false },
        ),
        response: { 400: ErrorRef, 403: ErrorRef, 404: ErrorRef },
      },
    },
    async (request, reply) => {
      if (request.query.file !== deviceTableFile)
        throw new DomainError(
          'not-found',
          `file '${request.query.file.slice(0, 64)}' is not offered; only ${deviceTableFile} is (see docs/netalertx.md).`,
          { code: 'NOT_OFFERED' },
        );
      async function* chunks(): AsyncGenerator<string> {
        yield '{"data":[';
        let first = true;
        const rows = deviceRows(store);
        for await (const row of rows) {
          // Assigned, not spread: see deviceListItemOf (store/sqlite/devices.ts).
          const device = rowToJson(row);
          device.devStatus = deviceStatus(row.devPresentLastScan as number, row.devAlertDown as number);
          yield `${first ? '' : ','}${JSON.stringify(device)}`;
          first = false;
        }
        yield ']}';
      }
      return reply.type('application/json; charset=utf-8').send(Readable.from(chunks()));
    },
  );
}
