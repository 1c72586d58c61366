/**
 * The shapes every part of the alert engine shares: channel names, the event object a notification
 * carries (the webhook body's `events` items), a delivery, and what a channel must do with one.
 */
import type { DeviceStatus } from '../devices/status.js';
import type { EventType } from '../scanner/state-machine.js';

export const channelNames = ['webhook', 'ntfy', 'apprise', 'mqtt'] as const;
export type ChannelName = (typeof channelNames)[number];

export const notificationStatuses = ['pending', 'sent', 'failed', 'skipped'] as const;
export type NotificationStatus = (typeof notificationStatuses)[number];

/** One notified scan event, with a snapshot of its device taken in the cycle that wrote it. */
export interface NotificationEvent {
  readonly type: EventType;
  /** ISO 8601 with Z. */
  readonly time: string;
  readonly mac: string;
  readonly ip: string;
  readonly additionalInfo: string;
  readonly device: {
    readonly devName: string;
    readonly devOwner: string;
    readonly devType: string;
    readonly devVendor: string;
    readonly devLastIP: string;
    readonly devStatus: DeviceStatus;
  };
}

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
    // fetch wraps the socket error ("fetch failed"); the cause says what happened.
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
