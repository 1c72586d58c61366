/**
 * The alert outbox's storage: the Notifications and NotificationPayloads tables, and what an alert
 * decision reads of a device. What to notify is decided in src/alerts (outbox.ts, rules.ts); this
 * interface only keeps the rows. SQLite: sqlite/outbox.ts.
 */
import type {
  ChannelName,
  NotificationEvent,
  NotificationStatus,
  NotificationView,
} from '../alerts/model.js';
import type { DeviceStatus } from '../devices/status.js';

/** What the alert rules need of a device, as the cycle leaves it. */
export interface AlertDevice {
  readonly devName: string;
  readonly devOwner: string;
  readonly devType: string;
  readonly devVendor: string;
  readonly devLastIP: string;
  readonly devStatus: DeviceStatus;
  readonly alertEvents: boolean;
  readonly alertDown: boolean;
  readonly skipRepeatedHours: number;
  readonly lastNotification: Date | null;
  readonly flapping: boolean;
}

/** One payload and its row per channel: what one cycle notifies (or skips) with one status. */
export interface NotificationBatch {
  readonly status: 'pending' | 'skipped';
  /** lastError of the rows (why they were skipped), or null. */
  readonly reason: string | null;
  readonly events: readonly NotificationEvent[];
  /** The first events, as the list shows them. */
  readonly preview: readonly NotificationEvent[];
  readonly channels: readonly ChannelName[];
  /** Unix ms of the first attempt (pending), or null. */
  readonly dueMs: number | null;
}

/** A pending row due for an attempt (its payload is read apart: it can be large). */
export interface DueRow {
  readonly id: number;
  readonly deliveryId: string;
  readonly attempts: number;
  readonly payloadId: number;
}

export interface OutboxPruneBatch {
  /** Notifications deleted. */
  readonly notifications: number;
  /** Payloads deleted (no notification referred to them any more). */
  readonly payloads: number;
  /** The ids of the payloads deleted (a cache of parsed payloads drops them). */
  readonly payloadIds: readonly number[];
}

/**
 * The notifications of a cycle's events, written in the cycle's own transaction: the store reads
 * the alert fields of `macs` as the cycle left them and writes what `plan` makes of them.
 */
export interface NotifyRequest {
  readonly macs: readonly string[];
  /** Pure: decides from the devices (missing ones left out) which batches to write. */
  readonly plan: (devices: ReadonlyMap<string, AlertDevice>) => readonly NotificationBatch[];
  readonly createdAt: Date;
  /**
   * Called once the planned batches are committed, so that the delivery loop looks for them then
   * (on PostgreSQL a read on another connection does not see them before; SQLite's transaction has
   * committed before the loop's next turn anyway).
   */
  readonly committed?: () => void;
}

/** Every method is asynchronous; the writes are durable when they settle. */
export interface AlertOutboxStore {
  /** Pending rows of a channel due at `nowMs`, oldest first, at most `limit`. */
  due(channel: ChannelName, nowMs: number, limit: number): Promise<DueRow[]>;
  /** A payload's events. */
  payload(payloadId: number): Promise<NotificationEvent[]>;
  /** Unix ms of the earliest pending attempt, or null when nothing is pending. */
  nextDue(): Promise<number | null>;
  /** The row is sent and its devices' devLastNotification is `sentAt`, in one write. */
  sent(id: number, sentAt: Date, macs: readonly string[]): Promise<void>;
  retryLater(id: number, nextAttemptAtMs: number, error: string): Promise<void>;
  failed(id: number, error: string): Promise<void>;
  /** Every pending row of the channel failed with `error`; how many. */
  failPending(channel: ChannelName, error: string): Promise<number>;
  /** A page, newest first, optionally of one status, each with its preview. */
  list(
    status: NotificationStatus | undefined,
    offset: number,
    limit: number,
  ): Promise<{ total: number; notifications: NotificationView[] }>;
  /** Deletes up to `limit` sent/failed/skipped rows older than `before` and unused payloads. */
  pruneBatch(before: Date, limit: number): Promise<OutboxPruneBatch>;
  countsByChannelAndStatus(): Promise<
    Array<{ channel: ChannelName; status: NotificationStatus; count: number }>
  >;
}
