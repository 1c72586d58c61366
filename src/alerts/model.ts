/**
 * The shapes every part of the alert engine shares: channel names, the event object a notification
 * carries (the webhook body's `events` items) and an outbox row, each written once as a TypeBox
 * schema (for the API and OpenAPI) with its type derived from it; a delivery, and what a channel
 * must do with one.
 */
import { Type, type Static } from '@sinclair/typebox';
import { notifiableEventTypes } from '../config.js';
import { deviceStatuses } from '../devices/status.js';

export const channelNames = ['webhook', 'ntfy', 'apprise', 'mqtt'] as const;
export type ChannelName = (typeof channelNames)[number];

export const notificationStatuses = ['pending', 'sent', 'failed', 'skipped'] as const;
export type NotificationStatus = (typeof notificationStatuses)[number];

const literals = <T extends string>(values: readonly T[]) =>
  Type.Union(values.map((value) => Type.Literal(value)));

/** One notified scan event, with a snapshot of its device taken in the cycle that wrote it. */
export const NotificationEventSchema = Type.Object(
  {
    type: literals(notifiableEventTypes),
    time: Type.String({ format: 'date-time' }),
    mac: Type.String(),
    ip: Type.String(),
    additionalInfo: Type.String(),
    device: Type.Object({
      devName: Type.String(),
      devOwner: Type.String(),
      devType: Type.String(),
      devVendor: Type.String(),
      devLastIP: Type.String(),
      devStatus: literals(deviceStatuses),
      devRandomMac: Type.Integer({
        minimum: 0,
        maximum: 1,
        description: "The event's MAC is random (locally administered).",
      }),
    }),
  },
  { description: 'A notified scan event, with its device as it was when the cycle wrote the event.' },
);
export type NotificationEvent = Static<typeof NotificationEventSchema>;

/** A row of the outbox as GET /notifications shows it. */
/**
 * Events of a notification GET /notifications shows (the first ones; `eventCount` says how many in
 * all). Written with each payload; the migration that added the preview uses the same number.
 */
export const previewEvents = 20;

export const NotificationSchema = Type.Object(
  {
    id: Type.Integer(),
    deliveryId: Type.String({
      format: 'uuid',
      description: 'Stable across retries: receivers de-duplicate on it.',
    }),
    channel: literals(channelNames),
    status: literals(notificationStatuses),
    attempts: Type.Integer({ description: 'Attempts made so far.' }),
    createdAt: Type.String({ format: 'date-time', description: 'When the scan cycle wrote it.' }),
    sentAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the receiver confirmed it; null unless sent.',
    }),
    lastError: Type.Union([Type.String(), Type.Null()], {
      description:
        "What went wrong in the last failed attempt; 'flapping' on a skipped row whose events' device flaps.",
    }),
    eventCount: Type.Integer({ description: 'Events this notification carries (delivers) in all.' }),
    events: Type.Array(NotificationEventSchema, {
      maxItems: previewEvents,
      description: `The first ${previewEvents} events (all of them when eventCount is ${previewEvents} or fewer).`,
    }),
  },
  { $id: 'Notification', additionalProperties: false },
);
export type NotificationView = Static<typeof NotificationSchema>;

/** What a channel sends in one attempt. The deliveryId stays the same across retries. */
export interface Delivery {
  readonly deliveryId: string;
  /** ISO 8601 with Z: when this attempt was made. */
  readonly sentAt: string;
  readonly events: readonly NotificationEvent[];
  /** A test delivery from POST /notifications/test (no events). */
  readonly test?: boolean;
}

export interface Channel {
  readonly name: ChannelName;
  /**
   * Sends one delivery; resolves once the receiver confirmed it (HTTP 2xx, MQTT PUBACK). Rejects with
   * an Error whose message says what went wrong, without any secret; `signal` aborts the attempt.
   */
  send(delivery: Delivery, signal: AbortSignal): Promise<void>;
}

/** An Error's message, or the value as text. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    // A wrapped error (fetch: "fetch failed") names what happened in its cause.
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
