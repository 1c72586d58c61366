/**
 * The SQLite outbox (interface: ../outbox.ts). Statements are prepared once; every value is a
 * bound parameter.
 */
import { randomUUID } from 'node:crypto';
import type { Database, Statement } from 'better-sqlite3';
import type {
  ChannelName,
  NotificationEvent,
  NotificationStatus,
  NotificationView,
} from '../../alerts/model.js';
import { deviceStatus } from '../../devices/status.js';
import { dbTime, fromDbTime } from '../../time.js';
import type {
  AlertDevice,
  AlertOutboxStore,
  DueRow,
  NotificationBatch,
  NotifyRequest,
  OutboxPruneBatch,
} from '../outbox.js';
import { settled } from './device-store.js';
import type { SqliteDevices } from './devices.js';

/** A device's alert fields as both stores read them (the PostgreSQL outbox too). */
export interface DeviceAlertRow {
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

export class SqliteOutboxStore implements AlertOutboxStore {
  private readonly selectDevice: Statement<[string], DeviceAlertRow>;
  private readonly insertPayload: Statement<[string, number, string]>;
  private readonly insert: Statement<
    [string, ChannelName, NotificationStatus, string, number | null, number | bigint, string | null]
  >;
  private readonly dueStatement: Statement<[ChannelName, number, number], DueRow>;
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
  private readonly pruneTransaction: (before: string, limit: number) => OutboxPruneBatch;
  private readonly sentTransaction: (id: number, sentAt: string, macs: readonly string[]) => void;
  private readonly writeTransaction: (batches: readonly NotificationBatch[], createdAt: string) => void;

  /** @param core whose group commit the outbox's writes share */
  constructor(
    db: Database,
    private readonly core: Pick<SqliteDevices, 'write'>,
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
      const payloadIds: number[] = [];
      for (const payloadId of new Set(rows.map((row) => row.payloadId)))
        if (this.deleteUnusedPayload.run(payloadId, payloadId).changes > 0) payloadIds.push(payloadId);
      return { notifications: rows.length, payloads: payloadIds.length, payloadIds };
    });
    this.sentTransaction = db.transaction((id: number, sentAt: string, macs: readonly string[]) => {
      this.markSent.run(sentAt, id);
      for (const mac of macs) this.setLastNotification.run(sentAt, mac);
    });
    this.writeTransaction = db.transaction((batches: readonly NotificationBatch[], createdAt: string) => {
      for (const batch of batches) {
        const payloadId = this.insertPayload.run(
          JSON.stringify(batch.events),
          batch.events.length,
          JSON.stringify(batch.preview),
        ).lastInsertRowid;
        for (const channel of batch.channels)
          this.insert.run(
            randomUUID(),
            channel,
            batch.status,
            createdAt,
            batch.dueMs,
            payloadId,
            batch.reason,
          );
      }
    });
  }

  /** The device's alert fields, as the running transaction sees them. */
  private alertDevice(mac: string): AlertDevice | undefined {
    const row = this.selectDevice.get(mac);
    return row === undefined ? undefined : alertDeviceOf(row);
  }

  /** A cycle's notifications: planned from its devices and written. Run inside its transaction. */
  writeRequested(request: NotifyRequest): void {
    const devices = new Map<string, AlertDevice>();
    for (const mac of new Set(request.macs)) {
      const device = this.alertDevice(mac);
      if (device !== undefined) devices.set(mac, device);
    }
    const batches = request.plan(devices);
    if (batches.length > 0) this.writeTransaction(batches, dbTime(request.createdAt));
  }

  due(channel: ChannelName, nowMs: number, limit: number): Promise<DueRow[]> {
    return settled(() => this.dueStatement.all(channel, nowMs, limit));
  }

  payload(payloadId: number): Promise<NotificationEvent[]> {
    return settled(
      () => JSON.parse(this.payloadStatement.get(payloadId)?.events ?? '[]') as NotificationEvent[],
    );
  }

  nextDue(): Promise<number | null> {
    return settled(() => this.nextDueStatement.get()?.next ?? null);
  }

  sent(id: number, sentAt: Date, macs: readonly string[]): Promise<void> {
    return this.core.write(() => {
      this.sentTransaction(id, dbTime(sentAt), macs);
    });
  }

  retryLater(id: number, nextAttemptAtMs: number, error: string): Promise<void> {
    return this.core.write(() => {
      this.markRetry.run(nextAttemptAtMs, error, id);
    });
  }

  failed(id: number, error: string): Promise<void> {
    return this.core.write(() => {
      this.markFailed.run(error, id);
    });
  }

  failPending(channel: ChannelName, error: string): Promise<number> {
    return this.core.write(() => this.failChannel.run(error, channel).changes);
  }

  list(
    status: NotificationStatus | undefined,
    offset: number,
    limit: number,
  ): Promise<{ total: number; notifications: NotificationView[] }> {
    return settled(() => {
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
    });
  }

  pruneBatch(before: Date, limit: number): Promise<OutboxPruneBatch> {
    return settled(() => this.pruneTransaction(dbTime(before), limit));
  }

  countsByChannelAndStatus(): Promise<
    Array<{ channel: ChannelName; status: NotificationStatus; count: number }>
  > {
    return settled(() => this.countsStatement.all());
  }
}

/** A device's alert row as the alert rules read it. */
export function alertDeviceOf(row: DeviceAlertRow): AlertDevice {
  return {
    devName: row.devName,
    devOwner: row.devOwner,
    devType: row.devType,
    devVendor: row.devVendor,
    devLastIP: row.devLastIP,
    devStatus: deviceStatus(row.devPresentLastScan, row.devAlertDown),
    alertEvents: row.devAlertEvents === 1,
    alertDown: row.devAlertDown === 1,
    skipRepeatedHours: row.devSkipRepeated,
    lastNotification: row.devLastNotification === null ? null : new Date(fromDbTime(row.devLastNotification)),
    flapping: row.flapping === 1,
  };
}
