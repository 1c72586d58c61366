/**
 * The list endpoints beyond NetAlertX's interface: GET /devices,
 * GET /device/<mac>/events and GET /device/<mac>/sessions. Each handler validates its parameters
 * (params.ts), asks the repository for one page, and wraps it as {success, <items>, total, offset,
 * limit}. Unknown query parameters are a 400 naming them, so a typo (`?stauts=Down`) is not
 * silently an unfiltered list.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { App } from '../http/app.js';
import { jsonListStream } from '../http/json-stream.js';
import { ErrorRef } from '../http/schemas.js';
import { integerTextPattern } from '../validation.js';
import { DeviceListItemSchema } from './catalogue.js';
import { EventSchema, SessionSchema } from './history.js';
import type { DeviceListQuery } from './list-query.js';
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
  periodParam,
  searchParam,
  sortParam,
  statusParam,
} from './params.js';
import type { DeviceListItem, DeviceRepository } from './repository.js';

const tags = ['devices'];

const DevicesQuery = Type.Object(
  {
    status: Type.Optional(statusParam),
    q: Type.Optional(searchParam),
    sort: Type.Optional(sortParam),
    order: Type.Optional(orderParam),
    random: Type.Optional(randomParam),
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

/**
 * Devices read per batch of a streamed list: one short read, then the socket takes them. Small,
 * because a device may hold ~330 KB of text: 8 keep a batch under 3 MB.
 */
const streamBatch = 8;

/**
 * The list from `offset`, `limit` devices (null: all), read in short batches so that other requests
 * run between them and no whole list is held in memory; `total` is that of the first batch.
 */
function deviceBatches(
  repository: DeviceRepository,
  query: DeviceListQuery,
  offset: number,
  limit: number | null,
): { total: number; items: Iterable<DeviceListItem> } {
  const first = repository.listDevices(query, { offset, limit: Math.min(streamBatch, limit ?? streamBatch) });
  function* items(): Generator<DeviceListItem> {
    let batch = first.items;
    let at = offset;
    let left = limit ?? Number.POSITIVE_INFINITY;
    for (;;) {
      yield* batch;
      at += batch.length;
      left -= batch.length;
      if (batch.length < streamBatch || left <= 0) return;
      batch = repository.listDevices(query, { offset: at, limit: Math.min(streamBatch, left) }).items;
    }
  }
  return { total: first.total, items: items() };
}

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
      const { total, items } = deviceBatches(repository, { status, q, random, ...sort }, offset, limit);
      // Streamed: a list of every device, each with text fields of up to 16 KB, must not be built
      // in memory as one object and one string.
      return reply
        .type('application/json; charset=utf-8')
        .send(jsonListStream('devices', items, { total, offset, limit }));
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
      const mac = deviceMac(request.params.mac, repository);
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
      const mac = deviceMac(request.params.mac, repository);
      const period = parsePeriod(request.query.period);
      const page = parsePage(request.query);
      const result = repository.listSessions(mac, period, new Date(), page);
      if (result === undefined) throw notFound(mac);
      return { success: true as const, sessions: result.items, total: result.total, ...page };
    },
  );
}
