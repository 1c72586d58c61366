/**
 * `GET /notifications` (the outbox, newest first, by status, paged) and `POST /notifications/test`
 * (one test delivery to every configured channel now), as one Fastify plugin. Thin: the outbox
 * and `Alerts.test` do the work. A receiver's failure is part of the 200 answer, never a 500.
 */
import { Type } from '@sinclair/typebox';
import { pagingParams, parsePage } from '../devices/params.js';
import { stringEnum } from '../enum-schema.js';
import { DomainError } from '../errors.js';
import type { App } from '../http/app.js';
import { ErrorRef } from '../http/schemas.js';
import type { Alerts } from './index.js';
import { channelNames, NotificationSchema, notificationStatuses, type NotificationStatus } from './model.js';

export interface NotificationsRoutesOptions {
  readonly alerts: Alerts;
}

const ListQuery = Type.Object(
  {
    status: Type.Optional(
      stringEnum(
        notificationStatuses,
        `Only notifications with this status: ${notificationStatuses.join(', ')}.`,
        'INVALID_NOTIFICATION_STATUS',
      ),
    ),
    ...pagingParams,
  },
  { additionalProperties: false },
);

const ListResponse = Type.Object({
  success: Type.Literal(true),
  notifications: Type.Array(Type.Ref('Notification')),
  total: Type.Integer({ description: 'Notifications with the status asked for (all of them without).' }),
  offset: Type.Integer(),
  limit: Type.Integer(),
});

const TestResponse = Type.Object({
  success: Type.Literal(true),
  results: Type.Array(
    Type.Object({
      channel: Type.Union(channelNames.map((name) => Type.Literal(name))),
      ok: Type.Boolean({ description: 'The receiver confirmed the test delivery.' }),
      error: Type.Union([Type.String(), Type.Null()], { description: 'Why not, when ok is false.' }),
    }),
  ),
});

const tags = ['notifications'];

function parseNotificationStatus(raw: string | undefined): NotificationStatus | undefined {
  if (raw === undefined) return undefined;
  if ((notificationStatuses as readonly string[]).includes(raw)) return raw as NotificationStatus;
  throw new DomainError('invalid', `status must be one of: ${notificationStatuses.join(', ')}.`, {
    code: 'INVALID_NOTIFICATION_STATUS',
  });
}

export default async function notificationsRoutes(app: App, opts: NotificationsRoutesOptions): Promise<void> {
  const { alerts } = opts;
  app.addSchema(NotificationSchema);

  app.get(
    '/notifications',
    {
      schema: {
        tags,
        summary: 'The notification outbox, newest first: one row per channel and scan cycle.',
        querystring: ListQuery,
        response: { 200: ListResponse, 400: ErrorRef, 403: ErrorRef },
      },
    },
    async (request) => {
      const status = parseNotificationStatus(request.query.status);
      const page = parsePage(request.query);
      const { total, notifications } = await alerts.outbox.list(status, page.offset, page.limit);
      return { success: true as const, notifications, total, ...page };
    },
  );

  app.post(
    '/notifications/test',
    {
      schema: {
        tags,
        summary: 'Send one test delivery to every configured channel now.',
        description:
          'Answers 200 with one result per channel; a channel whose receiver failed is `ok: false` with ' +
          'its error. 409 when no channel is configured. Nothing is stored in the outbox.',
        response: { 200: TestResponse, 403: ErrorRef, 409: ErrorRef },
      },
    },
    async () => ({ success: true as const, results: await alerts.test() }),
  );
}
