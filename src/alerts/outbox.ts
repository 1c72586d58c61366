/**
 * The alert outbox: what a scan cycle's events notify, kept by the store's outbox
 * (src/store/outbox.ts). A cycle's notifications are written by `record`, which the scanner calls
 * inside the cycle's own transaction (before COMMIT), so a crash either keeps the cycle and its
 * notifications or neither. One row per channel per cycle carries all of the cycle's notified
 * events (and, when some were skipped, one `skipped` row per channel carries those). The delivery
 * loop reads due rows and records each attempt's outcome here.
 */
import type { AlertDevice, AlertOutboxStore, NotificationBatch, NotifyRequest } from '../store/outbox.js';
import { isRandomMac } from '../validation.js';
import type { NotifiableEventType, ProbeNoticeType } from '../config.js';
import type { PlannedEvent } from '../scanner/state-machine.js';
import { dbTime, fromDbTime } from '../time.js';
import {
  previewEvents,
  type ChannelName,
  type NotificationEvent,
  type NotificationStatus,
  type NotificationView,
} from './model.js';
import { decide } from './rules.js';

/** A pending row the delivery loop may send. */
export interface DueNotification {
  readonly id: number;
  readonly deliveryId: string;
  readonly attempts: number;
  readonly events: NotificationEvent[];
}

export interface OutboxOptions {
  /** The configured channels: one row each per cycle. Empty: nothing is recorded. */
  readonly channels: readonly ChannelName[];
  /** NOTIFY_EVENTS. */
  readonly enabledTypes: ReadonlySet<NotifiableEventType>;
  /**
   * Called after `record` wrote rows and again once they are committed (the delivery loop wakes
   * up; harmless if rolled back).
   */
  readonly onRecorded?: () => void;
  /** Called per channel row recorded as skipped (metrics). */
  readonly onSkipped?: (channel: ChannelName) => void;
}

export interface OutboxPruneResult {
  /** Notifications deleted. */
  readonly notifications: number;
  /** Payloads deleted (no notification referred to them any more). */
  readonly payloads: number;
}

export interface RecordResult {
  readonly notified: number;
  readonly skipped: number;
}

export class Outbox {
  private readonly payloads = new Map<number, NotificationEvent[]>();

  constructor(
    private readonly store: AlertOutboxStore,
    private readonly options: OutboxOptions,
  ) {}

  /**
   * What the store writes for a cycle's events, in the cycle's own transaction: the plan reads the
   * devices as the cycle leaves them. Undefined when nothing can be notified (no channel, no event).
   */
  /**
   * A probe's notice (`Probe Offline`, `Probe Online`) to every channel, unless NOTIFY_EVENTS leaves
   * the type out; undefined then. Written in the transaction that changes the probe's status (or
   * applies its cycle), so that the notice and the change commit together. It names no device:
   * `mac` and `ip` are empty, `device.devName` is the probe's name and `device.devType` is `Probe`.
   */
  noticeRequest(
    type: ProbeNoticeType,
    probe: { readonly name: string; readonly site: string },
    info: string,
    now: Date,
  ): NotifyRequest | undefined {
    const { channels, enabledTypes } = this.options;
    if (channels.length === 0 || !enabledTypes.has(type)) return undefined;
    const item: NotificationEvent = {
      type,
      time: fromDbTime(dbTime(now)),
      mac: '',
      ip: '',
      additionalInfo: info,
      device: {
        devName: probe.name,
        devOwner: '',
        devType: 'Probe',
        devVendor: '',
        devLastIP: '',
        devStatus: type === 'Probe Offline' ? 'Off-line' : 'On-line',
        devRandomMac: 0,
      },
    };
    return {
      macs: [],
      createdAt: now,
      committed: () => this.options.onRecorded?.(),
      plan: () => {
        this.options.onRecorded?.();
        return [
          { status: 'pending', reason: null, events: [item], preview: [item], channels, dueMs: Date.now() },
        ];
      },
    };
  }

  request(events: readonly PlannedEvent[], now: Date): NotifyRequest | undefined {
    const { channels } = this.options;
    if (channels.length === 0 || events.length === 0) return undefined;
    return {
      macs: events.map((e) => e.mac),
      createdAt: now,
      plan: (devices) => this.plan(events, devices, now).batches,
      committed: () => this.options.onRecorded?.(),
    };
  }

  /** The batches of a cycle's events, from its devices' alert fields (pure but for the callbacks). */
  plan(
    events: readonly PlannedEvent[],
    devices: ReadonlyMap<string, AlertDevice>,
    now: Date,
  ): { batches: NotificationBatch[]; result: RecordResult } {
    const { channels, enabledTypes } = this.options;
    const notified: NotificationEvent[] = [];
    const skipped: NotificationEvent[] = [];
    const skippedFlapping: NotificationEvent[] = [];
    for (const event of events) {
      if (!enabledTypes.has(event.type)) continue;
      const device = devices.get(event.mac);
      if (device === undefined) continue;
      const decision = decide(event.type, device, { enabledTypes, now });
      if (decision === 'ignore') continue;
      const item: NotificationEvent = {
        type: event.type,
        time: fromDbTime(dbTime(event.dateTime)),
        mac: event.mac,
        ip: event.ip,
        additionalInfo: event.additionalInfo,
        device: {
          devName: device.devName,
          devOwner: device.devOwner,
          devType: device.devType,
          devVendor: device.devVendor,
          devLastIP: device.devLastIP,
          devStatus: device.devStatus,
          devRandomMac: isRandomMac(event.mac) ? 1 : 0,
        },
      };
      (decision === 'notify' ? notified : decision === 'skip' ? skipped : skippedFlapping).push(item);
    }
    const batches: NotificationBatch[] = [];
    // The events skipped because their device flaps get rows of their own: lastError says why.
    for (const [status, items, reason] of [
      ['pending', notified, null],
      ['skipped', skipped, null],
      ['skipped', skippedFlapping, 'flapping'],
    ] as const) {
      if (items.length === 0) continue;
      batches.push({
        status,
        reason,
        events: items,
        preview: items.slice(0, previewEvents),
        channels,
        // Due at once by the wall clock (the cycle's `now` may be a test's clock).
        dueMs: status === 'pending' ? Date.now() : null,
      });
    }
    // Called inside the transaction: harmless if it rolls back (the delivery loop finds nothing).
    if (notified.length > 0) this.options.onRecorded?.();
    for (const items of [skipped, skippedFlapping])
      if (items.length > 0) for (const channel of channels) this.options.onSkipped?.(channel);
    return {
      batches,
      result: { notified: notified.length, skipped: skipped.length + skippedFlapping.length },
    };
  }

  /**
   * Pending rows of a channel whose next attempt is due at `nowMs`, oldest first, leaving out the
   * rows in `skip` (attempts in flight) without reading their payloads.
   */
  async due(
    channel: ChannelName,
    nowMs: number,
    limit: number,
    skip: ReadonlySet<number> = new Set(),
  ): Promise<DueNotification[]> {
    const rows = (await this.store.due(channel, nowMs, limit + skip.size)).filter((row) => !skip.has(row.id));
    const due: DueNotification[] = [];
    for (const row of rows.slice(0, limit))
      due.push({
        id: row.id,
        deliveryId: row.deliveryId,
        attempts: row.attempts,
        events: await this.parsedPayload(row.payloadId),
      });
    return due;
  }

  /**
   * The channels' rows of a cycle share one payload: parse it once (a cycle with thousands of
   * events carries a large one). The few most recent are kept.
   */
  private async parsedPayload(payloadId: number): Promise<NotificationEvent[]> {
    let events = this.payloads.get(payloadId);
    if (events === undefined) {
      events = await this.store.payload(payloadId);
      this.payloads.set(payloadId, events);
      for (const key of this.payloads.keys()) {
        if (this.payloads.size <= 8) break;
        this.payloads.delete(key);
      }
    }
    return events;
  }

  /** Unix ms of the earliest pending attempt, or null when nothing is pending. */
  nextDue(): Promise<number | null> {
    return this.store.nextDue();
  }

  /** The receiver confirmed: the row is sent and its devices' devLastNotification is `sentAt`. */
  sent(id: number, sentAt: Date, macs: readonly string[]): Promise<void> {
    return this.store.sent(id, sentAt, [...new Set(macs)]);
  }

  /** The attempt failed; another one is due at `nextAttemptAtMs`. */
  retryLater(id: number, nextAttemptAtMs: number, error: string): Promise<void> {
    return this.store.retryLater(id, nextAttemptAtMs, error);
  }

  /** The last attempt failed: the row is failed with `error`. */
  failed(id: number, error: string): Promise<void> {
    return this.store.failed(id, error);
  }

  /** Every pending row of a channel that is no longer configured is failed with `error`. */
  failPending(channel: ChannelName, error: string): Promise<number> {
    return this.store.failPending(channel, error);
  }

  /**
   * A page of notifications, newest first, optionally of one status: each with its event count and
   * its first `previewEvents` events, never the whole payload (a cycle can notify thousands).
   */
  list(
    status: NotificationStatus | undefined,
    offset: number,
    limit: number,
  ): Promise<{ total: number; notifications: NotificationView[] }> {
    return this.store.list(status, offset, limit);
  }

  /**
   * Deletes up to `limit` sent, failed or skipped notifications written before `before`, and the
   * payloads no notification refers to any more, in one transaction. Pending rows stay.
   */
  async pruneBatch(before: Date, limit: number): Promise<OutboxPruneResult> {
    const result = await this.store.pruneBatch(before, limit);
    // An id may be given again to a new payload (the largest one was deleted).
    for (const id of result.payloadIds) this.payloads.delete(id);
    return { notifications: result.notifications, payloads: result.payloads };
  }

  /** Rows by channel and status (for metrics: netkeep_notifications_total{channel,status}). */
  countsByChannelAndStatus(): Promise<
    Array<{ channel: ChannelName; status: NotificationStatus; count: number }>
  > {
    return this.store.countsByChannelAndStatus();
  }
}
