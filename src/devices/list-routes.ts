/**
 * The list endpoints beyond NetAlertX's interface: GET /devices,
 * GET /device/<mac>/events and GET /device/<mac>/sessions. Each handler validates its parameters
 * (params.ts), asks the repository for one page, and wraps it as {success, <items>, total, offset,
 * limit}. Unknown query parameters are a 400 naming them, so a typo (`?stauts=Down`) is not
 * silently an unfiltered list.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { jsonTextList } from '../http/json-stream.js';
import { ErrorRef } from '../http/schemas.js';
import { integerTextPattern } from '../validation.js';
import { DeviceListItemSchema, DeviceMapItemSchema, mapFieldNames } from './catalogue.js';
import { EventSchema, SessionSchema } from './history.js';
import { DeviceListCache } from './list-cache.js';
import {
  MacParams,
  maxLimit,
  notFound,
  pagingParams,
  parseDeviceListPage,
  parsePage,
  parsePeriod,
  orderParam,
  parseSearch,
  parseSort,
  parseStatus,
  parseRandom,
  deviceMac,
  randomParam,
  siteParam,
  periodParam,
  searchParam,
  sortParam,
  statusParam,
  sleepingParam,
  flappingParam,
  parseFlagFilter,
} from './params.js';
import type { DeviceStore } from '../store/devices.js';

const tags = ['devices'];

const DevicesQuery = Type.Object(
  {
    status: Type.Optional(statusParam),
    sleeping: Type.Optional(sleepingParam),
    flapping: Type.Optional(flappingParam),
    q: Type.Optional(searchParam),
    sort: Type.Optional(sortParam),
    order: Type.Optional(orderParam),
    random: Type.Optional(randomParam),
    site: Type.Optional(siteParam),
    offset: pagingParams.offset,
    limit: Type.Optional(
      Type.String({
        pattern: integerTextPattern,
        description: `Rows to return: an integer from 1 to ${maxLimit}. Without it, every device from the offset on (and \`limit\` is null in the answer).`,
      }),
    ),
  },
  { additionalProperties: false },
);

const HistoryQuery = Type.Object(
  { period: Type.Optional(periodParam), ...pagingParams },
  { additionalProperties: false },
);

/** `{success, <key>: [..], total, offset, limit}` for OpenAPI and the serialiser. */
function pageSchema(
  key: string,
  item: TSchema,
  limit: TSchema = Type.Integer({ description: 'The limit used.' }),
) {
  return Type.Object({
    success: Type.Literal(true),
    [key]: Type.Array(item),
    total: Type.Integer({ description: 'Rows in the whole filtered list (not just this page).' }),
    offset: Type.Integer({ description: 'The offset used.' }),
    limit,
  });
}

export interface DeviceListRoutesOptions {
  /** Where the lists are read from. */
  readonly repository: DeviceStore;
}

/** The device list routes, as an encapsulated Fastify plugin (register it with `app.register`). */
export default async function deviceListRoutes(
  app: App,
  { repository }: DeviceListRoutesOptions,
): Promise<void> {
  const cache = new DeviceListCache(repository);
  app.addSchema(DeviceListItemSchema);
  app.addSchema(DeviceMapItemSchema);
  app.addSchema(EventSchema);
  app.addSchema(SessionSchema);

  app.get(
    '/devices',
    {
      schema: {
        tags,
        summary:
          'List devices with their devStatus, devSleeping and devFlapping (no counts): by status or counter group, sleeping, flapping, site, searched, sorted (MAC order by default), paged.',
        querystring: DevicesQuery,
        response: {
          200: pageSchema(
            'devices',
            Type.Ref('DeviceListItem'),
            Type.Union([Type.Integer(), Type.Null()], {
              description: 'The limit used; null when none was given (every device was listed).',
            }),
          ),
          400: ErrorRef,
          403: ErrorRef,
        },
      },
    },
    async (request, reply) => {
      const status = parseStatus(request.query.status);
      const q = parseSearch(request.query.q);
      const sort = parseSort(request.query);
      const random = parseRandom(request.query.random);
      const { offset, limit } = parseDeviceListPage(request.query);
      const sleeping = parseFlagFilter(request.query.sleeping);
      const flapping = parseFlagFilter(request.query.flapping);
      const { site } = request.query;
      // A page is kept as its bytes; a long list is streamed from the cached texts: every device,
      // each with text fields of up to 16 KB, must not be built in memory as one object and one
      // string (list-cache.ts).
      const answer = await cache.answer(
        { status, sleeping, flapping, random, site, q, ...sort },
        offset,
        limit,
        ({ total, items }) => jsonTextList('devices', items, { total, offset, limit }),
      );
      return reply.type('application/json; charset=utf-8').send(answer);
    },
  );

  // The console's network map: every device, but only what the map draws of it, from the same
  // cache as the list (the items' texts and the MAC order of the whole list).
  app.get(
    '/devices/map',
    {
      schema: {
        tags,
        summary:
          'Every device (archived ones too) in MAC order with only what the network map draws: devMac, devName, devStatus, devParentMAC, devParentPort, devSite, devType.',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            devices: Type.Array(Type.Ref('DeviceMapItem')),
            total: Type.Integer({ description: 'Devices listed.' }),
          }),
          400: ErrorRef,
          403: ErrorRef,
        },
      },
    },
    async (_request, reply) => {
      const answer = await cache.answer(
        { status: 'all' },
        0,
        null,
        ({ total, items }) => jsonTextList('devices', items, { total }),
        mapFieldNames,
      );
      return reply.type('application/json; charset=utf-8').send(answer);
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
      const mac = await deviceMac(request.params.mac, repository);
      const period = parsePeriod(request.query.period);
      const page = parsePage(request.query);
      const result = await repository.listEvents(mac, period, new Date(), page);
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
      const mac = await deviceMac(request.params.mac, repository);
      const period = parsePeriod(request.query.period);
      const page = parsePage(request.query);
      const result = await repository.listSessions(mac, period, new Date(), page);
      if (result === undefined) throw notFound(mac);
      return { success: true as const, sessions: result.items, total: result.total, ...page };
    },
  );
}
