/**
 * The list endpoints beyond NetAlertX's interface: GET /devices,
 * GET /device/<mac>/events and GET /device/<mac>/sessions. Each handler validates its parameters
 * (params.ts), asks the repository for one page, and wraps it as {success, <items>, total, offset,
 * limit}. Unknown query parameters are a 400 naming them, so a typo (`?stauts=Down`) is not
 * silently an unfiltered list.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import { DeviceListItemSchema } from './catalogue.js';
import { EventSchema, SessionSchema } from './history.js';
import {
  MacParams,
  notFound,
  pagingParams,
  parsePage,
  parsePeriod,
  orderParam,
  parseSearch,
  parseSort,
  parseStatus,
  pathMac,
  periodParam,
  searchParam,
  sortParam,
  statusParam,
} from './params.js';
import type { DeviceRepository } from './repository.js';

const tags = ['devices'];

const DevicesQuery = Type.Object(
  {
    status: Type.Optional(statusParam),
    q: Type.Optional(searchParam),
    sort: Type.Optional(sortParam),
    order: Type.Optional(orderParam),
    ...pagingParams,
  },
  { additionalProperties: false },
);

const HistoryQuery = Type.Object(
  { period: Type.Optional(periodParam), ...pagingParams },
  { additionalProperties: false },
);

/** `{success, <key>: [..], total, offset, limit}` for OpenAPI and the serialiser. */
function pageSchema(key: string, item: TSchema) {
  return Type.Object({
    success: Type.Literal(true),
    [key]: Type.Array(item),
    total: Type.Integer({ description: 'Rows in the whole filtered list (not just this page).' }),
    offset: Type.Integer({ description: 'The offset used.' }),
    limit: Type.Integer({ description: 'The limit used.' }),
  });
}

export interface DeviceListRoutesOptions {
  /** Where the lists are read from. */
  readonly repository: DeviceRepository;
}

/** The device list routes, as an encapsulated Fastify plugin (register it with `app.register`). */
export default async function deviceListRoutes(
  app: App,
  { repository }: DeviceListRoutesOptions,
): Promise<void> {
  app.addSchema(DeviceListItemSchema);
  app.addSchema(EventSchema);
  app.addSchema(SessionSchema);

  app.get(
    '/devices',
    {
      schema: {
        tags,
        summary:
          'List devices with their devStatus (no counts): by status or counter group, searched, sorted (MAC order by default), paged.',
        querystring: DevicesQuery,
        response: {
          200: pageSchema('devices', Type.Ref('DeviceListItem')),
          400: ErrorRef,
          403: ErrorRef,
        },
      },
    },
    async (request) => {
      const status = parseStatus(request.query.status);
      const q = parseSearch(request.query.q);
      const sort = parseSort(request.query);
      const page = parsePage(request.query);
      const { items, total } = repository.listDevices({ status, q, ...sort }, page);
      return { success: true as const, devices: items, total, ...page };
    },
  );

  app.get(
    '/device/:mac/events',
    {
      schema: {
        tags,
        summary: "A device's events in the period, newest first, paged.",
        params: MacParams,
        querystring: HistoryQuery,
        response: {
          200: pageSchema('events', Type.Ref('DeviceEvent')),
          400: ErrorRef,
          403: ErrorRef,
          404: ErrorRef,
        },
      },
    },
    async (request) => {
      const mac = pathMac(request.params.mac);
      const period = parsePeriod(request.query.period);
      const page = parsePage(request.query);
      const result = repository.listEvents(mac, period, new Date(), page);
      if (result === undefined) throw notFound(mac);
      return { success: true as const, events: result.items, total: result.total, ...page };
    },
  );

  app.get(
    '/device/:mac/sessions',
    {
      schema: {
        tags,
        summary: "A device's sessions overlapping the period, newest connection first, paged.",
        params: MacParams,
        querystring: HistoryQuery,
        response: {
          200: pageSchema('sessions', Type.Ref('DeviceSession')),
          400: ErrorRef,
          403: ErrorRef,
          404: ErrorRef,
        },
      },
    },
    async (request) => {
      const mac = pathMac(request.params.mac);
      const period = parsePeriod(request.query.period);
      const page = parsePage(request.query);
      const result = repository.listSessions(mac, period, new Date(), page);
      if (result === undefined) throw notFound(mac);
      return { success: true as const, sessions: result.items, total: result.total, ...page };
    },
  );
}
