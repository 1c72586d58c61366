/**
 * `GET /history/events`: the event log across every device, newest first, with type and time
 * filters and paging. Its own path: `GET /events?mac=` belongs to NetAlertX's shape.
 */
import { Type } from '@sinclair/typebox';
import { stringPattern } from '../enum-schema.js';
import type { App } from '../http/app.js';
import { DomainError } from '../errors.js';
import { ErrorRef } from '../http/schemas.js';
import { acceptedTimePattern, fromDbTime, toDbTime } from '../time.js';
import type { EventLogFilter, EventLogStore } from '../store/event-log.js';
import { EventSchema, eventTypes, type EventType } from './history.js';
import { pagingParams, parsePage } from './params.js';

export interface EventLogRoutesOptions {
  readonly eventLog: EventLogStore;
}

const typeListWords = `must be a comma-separated list of: ${eventTypes.join(', ')}`;

/** `?type=` as parseTypes reads it: event types separated by commas, spaces around each; or blank. */
const typeAlternatives = `(?:${eventTypes.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`;
const typeListPattern = `^\\s*(?:${typeAlternatives}\\s*(?:,\\s*${typeAlternatives}\\s*)*)?$`;

const EventLogQuery = Type.Object(
  {
    type: Type.Optional(
      stringPattern(
        typeListPattern,
        `Comma-separated event types to keep: ${eventTypes.join(', ')}. Default: every type.`,
        { code: 'INVALID_EVENT_TYPE', rule: typeListWords },
      ),
    ),
    since: Type.Optional(
      Type.String({ pattern: acceptedTimePattern, description: 'ISO 8601 time: events at or after it.' }),
    ),
    until: Type.Optional(
      Type.String({ pattern: acceptedTimePattern, description: 'ISO 8601 time: events at or before it.' }),
    ),
    ...pagingParams,
  },
  { additionalProperties: false },
);

const EventLogItemSchema = Type.Composite(
  [
    Type.Omit(EventSchema, ['$id']),
    Type.Object({
      devName: Type.Union([Type.String(), Type.Null()], {
        description: "The device's name; null when the device no longer exists.",
      }),
    }),
  ],
  { $id: 'EventLogItem', additionalProperties: false },
);

function parseTypes(raw: string | undefined): EventType[] | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const types = raw.split(',').map((t) => t.trim());
  for (const type of types)
    if (!(eventTypes as readonly string[]).includes(type))
      throw new DomainError('invalid', `type ${typeListWords}.`, {
        code: 'INVALID_EVENT_TYPE',
      });
  return [...new Set(types)] as EventType[];
}

function parseTime(name: string, raw: string | undefined): Date | undefined {
  if (raw === undefined) return undefined;
  try {
    return new Date(fromDbTime(toDbTime(raw)));
  } catch {
    throw new DomainError('invalid', `${name} must be an ISO 8601 date-time, e.g. 2026-01-31T18:00:00Z.`, {
      code: 'INVALID_TIME',
    });
  }
}

export default async function eventLogRoutes(app: App, { eventLog }: EventLogRoutesOptions): Promise<void> {
  app.addSchema(EventLogItemSchema);
  app.get(
    '/history/events',
    {
      schema: {
        tags: ['devices'],
        summary: 'Events of every device, newest first, by type and time, paged, with the device name.',
        querystring: EventLogQuery,
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            events: Type.Array(Type.Ref('EventLogItem')),
            total: Type.Integer({ description: 'Events matching the filters (not just this page).' }),
            offset: Type.Integer(),
            limit: Type.Integer(),
          }),
          400: ErrorRef,
          403: ErrorRef,
        },
      },
    },
    async (request) => {
      const filter: EventLogFilter = {
        types: parseTypes(request.query.type),
        since: parseTime('since', request.query.since),
        until: parseTime('until', request.query.until),
      };
      const page = parsePage(request.query);
      const { items, total } = await eventLog.list(filter, page);
      return { success: true as const, events: items, total, ...page };
    },
  );
}
