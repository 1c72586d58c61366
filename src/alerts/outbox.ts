/**
 * The alert outbox: the `Notifications` table. A scan cycle's notifications are written by
 * `record`, which the scanner calls inside the cycle's own transaction (before COMMIT), so a crash
 * either keeps the cycle and its notifications or neither. One row per channel per cycle carries
 * all of the cycle's notified events (and, when some were skipped, one `skipped` row per channel
 * carries those). The delivery loop reads due rows and records each attempt's outcome here.
 *
 * Statements are prepared once; every value is a bound parameter.
 */
import { randomUUID } from 'node:crypto';
import type { Database, Statement } from 'better-sqlite3';
import { deviceStatus } from '../devices/status.js';
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

interface DeviceAlertRow {
  devName: string;
  devOwner: string;
  devType: string;
  devVendor: string;
  devLastIP: string;
  devPresentLastScan: number;
  devAlertDown: number;
  devAlertEvents: number;
  devSkipRepeated: number;
  devLastNotification: string | null;
  flapping: number;
}

interface NotificationRow {
  id: number;
  deliveryId: string;
  channel: ChannelName;
  status: NotificationStatus;
  attempts: number;
  createdAt: string;
  sentAt: string | null;
  lastError: string | null;
  payloadId: number;
  eventCount: number;
  preview: string;
}

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
  /** Called after `record` wrote rows (the delivery loop wakes up; harmless if rolled back). */
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
  private readonly selectDevice: Statement<[string], DeviceAlertRow>;
  private readonly insertPayload: Statement<[string, number, string]>;
  private readonly insert: Statement<
    [string, ChannelName, NotificationStatus, string, number | null, number | bigint, string | null]
  >;
  private readonly dueStatement: Statement<
    [ChannelName, number, number],
    { id: number; deliveryId: string; attempts: number; payloadId: number }
  >;
  private readonly payloadStatement: Statement<[number], { events: string }>;
  private readonly nextDueStatement: Statement<[], { next: number | null }>;
  private readonly markSent: Statement<[string, number]>;
  private readonly markRetry: Statement<[number, string, number]>;
  private readonly markFailed: Statement<[string, number]>;
  private readonly setLastNotification: Statement<[string, string]>;
  private readonly failChannel: Statement<[string, string]>;
  private readonly countStatement: Statement<[string | null, string | null], { total: number }>;
  private readonly pageStatement: Statement<[string | null, string | null, number, number], NotificationRow>;
  private readonly countsStatement: Statement<
    [],
    { channel: ChannelName; status: NotificationStatus; count: number }
  >;
  private readonly oldRows: Statement<[string, number], { id: number; payloadId: number }>;
  private readonly deleteRow: Statement<[number]>;
  private readonly deleteUnusedPayload: Statement<[number, number]>;
  private readonly pruneTransaction: (before: string, limit: number) => OutboxPruneResult;
  private readonly payloads = new Map<number, NotificationEvent[]>();
  private readonly sentTransaction: (id: number, sentAt: string, macs: readonly string[]) => void;

  constructor(
    db: Database,
    private readonly options: OutboxOptions,
  ) {
    this.selectDevice = db.prepare(`
      SELECT devName, devOwner, devType, devVendor, devLastIP, devPresentLastScan, devAlertDown,
             devAlertEvents, devSkipRepeated, devLastNotification,
             COALESCE((SELECT flapping FROM ScanState WHERE mac = devMac), 0) AS flapping
      FROM Devices WHERE devMac = ?`);
    this.insertPayload = db.prepare(
      'INSERT INTO NotificationPayloads (events, eventCount, preview) VALUES (?, ?, ?)',
    );
    this.insert = db.prepare(`
      INSERT INTO Notifications (deliveryId, channel, status, attempts, createdAt, nextAttemptAt, payloadId,
                                 lastError)
      VALUES (?, ?, ?, 0, ?, ?, ?, ?)`);
    // The payload is read separately, only when it is not parsed already (it can be large).
    this.dueStatement = db.prepare(`
      SELECT id, deliveryId, attempts, payloadId
      FROM Notifications INDEXED BY Notifications_due
      WHERE status = 'pending' AND channel = ? AND nextAttemptAt <= ?
      ORDER BY nextAttemptAt, id LIMIT ?`);
    this.payloadStatement = db.prepare('SELECT events FROM NotificationPayloads WHERE id = ?');
    this.nextDueStatement = db.prepare(
      "SELECT MIN(nextAttemptAt) AS next FROM Notifications WHERE status = 'pending'",
    );
    this.markSent = db.prepare(`
      UPDATE Notifications
      SET status = 'sent', attempts = attempts + 1, sentAt = ?, nextAttemptAt = NULL, lastError = NULL
      WHERE id = ?`);
    this.markRetry = db.prepare(`
      UPDATE Notifications SET attempts = attempts + 1, nextAttemptAt = ?, lastError = ? WHERE id = ?`);
    this.markFailed = db.prepare(`
      UPDATE Notifications
      SET status = 'failed', attempts = attempts + 1, nextAttemptAt = NULL, lastError = ?
      WHERE id = ?`);
    this.setLastNotification = db.prepare('UPDATE Devices SET devLastNotification = ? WHERE devMac = ?');
    this.failChannel = db.prepare(`
      UPDATE Notifications SET status = 'failed', nextAttemptAt = NULL, lastError = ?
      WHERE status = 'pending' AND channel = ?`);
    this.countStatement = db.prepare(
      'SELECT COUNT(*) AS total FROM Notifications WHERE ? IS NULL OR status = ?',
    );
    this.pageStatement = db.prepare(`
      SELECT n.id, n.deliveryId, n.channel, n.status, n.attempts, n.createdAt, n.sentAt, n.lastError,
             n.payloadId, p.eventCount, p.preview
      FROM Notifications n JOIN NotificationPayloads p ON p.id = n.payloadId
      WHERE ? IS NULL OR n.status = ?
      ORDER BY n.id DESC LIMIT ? OFFSET ?`);
    this.countsStatement = db.prepare(
      'SELECT channel, status, COUNT(*) AS count FROM Notifications GROUP BY channel, status',
    );
    // Pending rows are never pruned: they are still to be delivered, however old.
    this.oldRows = db.prepare(`
      SELECT id, payloadId FROM Notifications
      WHERE status IN ('sent', 'failed', 'skipped') AND createdAt < ?
      ORDER BY id LIMIT ?`);
    this.deleteRow = db.prepare('DELETE FROM Notifications WHERE id = ?');
    this.deleteUnusedPayload = db.prepare(`
      DELETE FROM NotificationPayloads
      WHERE id = ? AND NOT EXISTS (SELECT 1 FROM Notifications WHERE payloadId = ?)`);
    this.pruneTransaction = db.transaction((before: string, limit: number) => {
      const rows = this.oldRows.all(before, limit);
      for (const row of rows) this.deleteRow.run(row.id);
      let payloads = 0;
      for (const payloadId of new Set(rows.map((row) => row.payloadId))) {
        const deleted = this.deleteUnusedPayload.run(payloadId, payloadId).changes;
        payloads += deleted;
        // The id may be given again to a new payload (the largest one was deleted).
        if (deleted > 0) this.payloads.delete(payloadId);
      }
      return { notifications: rows.length, payloads };
    });
    this.sentTransaction = db.transaction((id: number, sentAt: string, macs: readonly string[]) => {
      this.markSent.run(sentAt, id);
      for (const mac of macs) this.setLastNotification.run(sentAt, mac);
    });
  }

  /**
   * Writes the notifications of a cycle's events. Must run inside the cycle's transaction, after
   * its writes (the device rows it reads are those the cycle leaves).
   */
  /**
   * Writes a probe's notice (`Probe Offline`, `Probe Online`) to every channel, unless
   * NOTIFY_EVENTS leaves the type out. Call it inside the transaction that changes the probe's
   * status, so that the notice and the status commit together. It names no device: `mac` and `ip`
   * are empty, `device.devName` is the probe's name and `device.devType` is `Probe`.
   */
  recordNotice(
    type: ProbeNoticeType,
    probe: { readonly name: string; readonly site: string },
    info: string,
    now: Date,
  ): boolean {
    const { channels, enabledTypes } = this.options;
    if (channels.length === 0 || !enabledTypes.has(type)) return false;
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
    const payloadId = this.insertPayload.run(
      JSON.stringify([item]),
      1,
      JSON.stringify([item]),
    ).lastInsertRowid;
    for (const channel of channels)
      this.insert.run(randomUUID(), channel, 'pending', dbTime(now), Date.now(), payloadId, null);
    this.options.onRecorded?.();
    return true;
  }

  record(events: readonly PlannedEvent[], now: Date): RecordResult {
    const { channels, enabledTypes } = this.options;
    if (channels.length === 0 || events.length === 0) return { notified: 0, skipped: 0 };
    const notified: NotificationEvent[] = [];
    const skipped: NotificationEvent[] = [];
    const skippedFlapping: NotificationEvent[] = [];
    for (const event of events) {
      if (!enabledTypes.has(event.type)) continue;
      const device = this.selectDevice.get(event.mac);
      if (device === undefined) continue;
      const decision = decide(
        event.type,
        {
          alertEvents: device.devAlertEvents === 1,
          alertDown: device.devAlertDown === 1,
          skipRepeatedHours: device.devSkipRepeated,
          lastNotification:
            device.devLastNotification === null ? null : new Date(fromDbTime(device.devLastNotification)),
          flapping: device.flapping === 1,
        },
        { enabledTypes, now },
      );
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
          devStatus: deviceStatus(device.devPresentLastScan, device.devAlertDown),
          devRandomMac: isRandomMac(event.mac) ? 1 : 0,
        },
      };
      (decision === 'notify' ? notified : decision === 'skip' ? skipped : skippedFlapping).push(item);
    }
    const createdAt = dbTime(now);
    // The events skipped because their device flaps get rows of their own: lastError says why.
    for (const [status, items, reason] of [
      ['pending', notified, null],
      ['skipped', skipped, null],
      ['skipped', skippedFlapping, 'flapping'],
    ] as const) {
      if (items.length === 0) continue;
      const payloadId = this.insertPayload.run(
        JSON.stringify(items),
        items.length,
        JSON.stringify(items.slice(0, previewEvents)),
      ).lastInsertRowid;
      // Due at once by the wall clock (the cycle's `now` may be a test's clock).
      const due = status === 'pending' ? Date.now() : null;
      for (const channel of channels)
        this.insert.run(randomUUID(), channel, status, createdAt, due, payloadId, reason);
    }
    if (notified.length > 0) this.options.onRecorded?.();
    for (const items of [skipped, skippedFlapping])
      if (items.length > 0) for (const channel of channels) this.options.onSkipped?.(channel);
    return { notified: notified.length, skipped: skipped.length + skippedFlapping.length };
  }

  /**
   * Pending rows of a channel whose next attempt is due at `nowMs`, oldest first, leaving out the
   * rows in `skip` (attempts in flight) without reading their payloads.
   */
  due(
    channel: ChannelName,
    nowMs: number,
    limit: number,
    skip: ReadonlySet<number> = new Set(),
  ): DueNotification[] {
    const rows = this.dueStatement.all(channel, nowMs, limit + skip.size).filter((row) => !skip.has(row.id));
    return rows.slice(0, limit).map((row) => ({
      id: row.id,
      deliveryId: row.deliveryId,
      attempts: row.attempts,
      events: this.parsedPayload(row.payloadId),
    }));
  }

  /**
   * The channels' rows of a cycle share one payload: parse it once (a cycle with thousands of
   * events carries a large one). The few most recent are kept.
   */
  private parsedPayload(payloadId: number): NotificationEvent[] {
    let events = this.payloads.get(payloadId);
    if (events === undefined) {
      events = JSON.parse(this.payloadStatement.get(payloadId)?.events ?? '[]') as NotificationEvent[];
      this.payloads.set(payloadId, events);
      for (const key of this.payloads.keys()) {
        if (this.payloads.size <= 8) break;
        this.payloads.delete(key);
      }
    }
    return events;
  }

  /** Unix ms of the earliest pending attempt, or null when nothing is pending. */
  nextDue(): number | null {
    return this.nextDueStatement.get()?.next ?? null;
  }

  /** The receiver confirmed: the row is sent and its devices' devLastNotification is `sentAt`. */
  sent(id: number, sentAt: Date, macs: readonly string[]): void {
    this.sentTransaction(id, dbTime(sentAt), [...new Set(macs)]);
  }

  /** The attempt failed; another one is due at `nextAttemptAtMs`. */
  retryLater(id: number, nextAttemptAtMs: number, error: string): void {
    this.markRetry.run(nextAttemptAtMs, error, id);
  }

  /** The last attempt failed: the row is failed with `error`. */
  failed(id: number, error: string): void {
    this.markFailed.run(error, id);
  }

  /** Every pending row of a channel that is no longer configured is failed with `error`. */
  failPending(channel: ChannelName, error: string): number {
    return this.failChannel.run(error, channel).changes;
  }

  /**
   * A page of notifications, newest first, optionally of one status: each with its event count and
   * its first `previewEvents` events, never the whole payload (a cycle can notify thousands).
   */
  list(
    status: NotificationStatus | undefined,
    offset: number,
    limit: number,
  ): { total: number; notifications: NotificationView[] } {
    const filter = status ?? null;
    const total = this.countStatement.get(filter, filter)?.total ?? 0;
    const notifications = this.pageStatement.all(filter, filter, limit, offset).map((row) => ({
      id: row.id,
      deliveryId: row.deliveryId,
      channel: row.channel,
      status: row.status,
      attempts: row.attempts,
      createdAt: fromDbTime(row.createdAt),
      sentAt: row.sentAt === null ? null : fromDbTime(row.sentAt),
      lastError: row.lastError,
      eventCount: row.eventCount,
      events: JSON.parse(row.preview) as NotificationEvent[],
    }));
    return { total, notifications };
  }

  /**
   * Deletes up to `limit` sent, failed or skipped notifications written before `before`, and the
   * payloads no notification refers to any more, in one transaction. Pending rows stay.
   */
  pruneBatch(before: Date, limit: number): OutboxPruneResult {
    return this.pruneTransaction(dbTime(before), limit);
  }

  /** Rows by channel and status (for metrics: netkeep_notifications_total{channel,status}). */
  countsByChannelAndStatus(): Array<{ channel: ChannelName; status: NotificationStatus; count: number }> {
    return this.countsStatement.all();
  }
}
