/**
 * The alert outbox on PostgreSQL (the Notifications and NotificationPayloads tables), shared by
 * every server of the database: `AlertOutboxStore` (../outbox.ts), with the SQLite outbox's
 * meaning, and `writeRequested` for a scan cycle's notifications (inside its transaction).
 *
 * What differs is `due`: with several servers, reading the due rows is not enough, two servers
 * would both send them. `due` CLAIMS them: in one statement it picks the due rows no other
 * transaction is claiming (`FOR UPDATE SKIP LOCKED`) and moves their next attempt to the end of
 * a lease. While the lease runs no other server sees them; the claimant marks them sent, failed or
 * retried. A server that dies mid-delivery leaves its rows to come due again when the lease ends,
 * and another server sends them. So a delivery is sent once while the servers run, and at least
 * once when one dies (the channels carry a deliveryId for receivers that must not see a repeat).
 */
import type pg from 'pg';
import type {
  ChannelName,
  NotificationEvent,
  NotificationStatus,
  NotificationView,
} from '../../alerts/model.js';
import { dbTime, fromDbTime } from '../../time.js';
import type {
  AlertDevice,
  AlertOutboxStore,
  DueRow,
  NotificationBatch,
  NotifyRequest,
  OutboxPruneBatch,
} from '../outbox.js';
import { alertDeviceOf, type DeviceAlertRow } from '../sqlite/outbox.js';
import type { PostgresPool } from './pool.js';

export interface PostgresOutboxOptions {
  /**
   * How long a claim keeps a row from the other servers: longer than any delivery takes (the
   * channels' own time limits are seconds). A server that dies leaves its rows to the others
   * after this.
   */
  readonly claimLeaseMs?: number;
}

type Queryable = Pick<pg.PoolClient, 'query'>;

export class PostgresOutboxStore implements AlertOutboxStore {
  private readonly leaseMs: number;

  constructor(
    private readonly store: PostgresPool,
    options: PostgresOutboxOptions = {},
  ) {
    this.leaseMs = options.claimLeaseMs ?? 120_000;
  }

  /**
   * A cycle's notifications: planned from its devices as the cycle leaves them, and written. On
   * `client` inside the cycle's transaction; without one, in a transaction of its own.
   */
  async writeRequested(request: NotifyRequest, client?: pg.PoolClient): Promise<void> {
    const write = async (c: pg.PoolClient): Promise<void> => {
      const devices = await this.alertDevices([...new Set(request.macs)], c);
      await this.writeNotifications(request.plan(devices), request.createdAt, c);
      const { committed } = request;
      if (committed !== undefined) this.store.afterCommit(c, committed);
    };
    if (client !== undefined) await write(client);
    else await this.store.transaction(write);
  }

  /**
   * The alert fields of these devices (those that exist, in the order given), in one read: on
   * `client`, inside a scan cycle's transaction, as the cycle leaves them (what its notifications
   * are planned from).
   */
  async alertDevices(macs: readonly string[], client?: Queryable): Promise<Map<string, AlertDevice>> {
    const sql = `SELECT "devMac", "devName", "devOwner", "devType", "devVendor", "devLastIP", "devPresentLastScan",
         "devAlertDown", "devAlertEvents", "devSkipRepeated", "devLastNotification",
         coalesce((SELECT "flapping" FROM "ScanState" WHERE "mac" = "devMac"), 0) AS "flapping"
       FROM "Devices" WHERE "devMac" = ANY($1::text[])`;
    type Row = DeviceAlertRow & { devMac: string } & Record<string, unknown>;
    const rows =
      client === undefined
        ? await this.store.query<Row>(sql, [[...macs]])
        : (await client.query<Row>(sql, [[...macs]])).rows;
    // In the order asked for, as the SQLite outbox gives them (a plan may iterate the map).
    const found = new Map(rows.map((row) => [row.devMac, alertDeviceOf(row)]));
    const devices = new Map<string, AlertDevice>();
    for (const mac of macs) {
      const device = found.get(mac);
      if (device !== undefined) devices.set(mac, device);
    }
    return devices;
  }

  /**
   * Writes the batches (payload, then a row per channel). Inside the scan cycle's transaction
   * when given its connection (`client`), else in a transaction of its own.
   */
  async writeNotifications(
    batches: readonly NotificationBatch[],
    createdAt: Date,
    client?: Queryable,
  ): Promise<void> {
    if (batches.length === 0) return;
    const write = async (c: Queryable): Promise<void> => {
      for (const batch of batches) {
        const { rows } = await c.query<{ id: number }>(
          `INSERT INTO "NotificationPayloads" ("events", "eventCount", "preview") VALUES ($1, $2, $3) RETURNING "id"`,
          [JSON.stringify(batch.events), batch.events.length, JSON.stringify(batch.preview)],
        );
        const payloadId = rows[0]?.id;
        await c.query(
          `INSERT INTO "Notifications" ("deliveryId", "channel", "status", "attempts", "createdAt", "nextAttemptAt", "payloadId", "lastError")
           SELECT gen_random_uuid()::text, channel, $2, 0, $3, $4, $5, $6 FROM unnest($1::text[]) AS channel`,
          [[...batch.channels], batch.status, dbTime(createdAt), batch.dueMs, payloadId, batch.reason],
        );
      }
    };
    if (client !== undefined) await write(client);
    else await this.store.transaction(write);
  }

  /**
   * Claims the channel's rows due at `nowMs` (oldest first, at most `limit`) for this server until
   * `nowMs` + the lease; rows another server is claiming at this moment are skipped, not waited for.
   */
  async due(channel: ChannelName, nowMs: number, limit: number): Promise<DueRow[]> {
    const rows = await this.store.query<DueRow>(
      `UPDATE "Notifications" AS n SET "nextAttemptAt" = $3
       FROM (SELECT "id" FROM "Notifications"
             WHERE "status" = 'pending' AND "channel" = $1 AND "nextAttemptAt" <= $2
             ORDER BY "nextAttemptAt", "id" LIMIT $4
             FOR UPDATE SKIP LOCKED) AS due
       WHERE n."id" = due."id"
       RETURNING n."id", n."deliveryId", n."attempts", n."payloadId"`,
      [channel, nowMs, nowMs + this.leaseMs, limit],
    );
    return rows.sort((a, b) => a.id - b.id);
  }

  async payload(payloadId: number): Promise<NotificationEvent[]> {
    const rows = await this.store.query<{ events: string }>(
      'SELECT "events" FROM "NotificationPayloads" WHERE "id" = $1',
      [payloadId],
    );
    return JSON.parse(rows[0]?.events ?? '[]') as NotificationEvent[];
  }

  /** Unix ms of the earliest pending attempt (a claimed row's: its lease end), or null. */
  async nextDue(): Promise<number | null> {
    const rows = await this.store.query<{ next: number | null }>(
      `SELECT min("nextAttemptAt") AS next FROM "Notifications" WHERE "status" = 'pending'`,
    );
    return rows[0]?.next ?? null;
  }

  /** The row is sent and its devices' devLastNotification is `sentAt`, in one transaction. */
  async sent(id: number, sentAt: Date, macs: readonly string[]): Promise<void> {
    const at = dbTime(sentAt);
    await this.store.transaction(async (c) => {
      await c.query(
        `UPDATE "Notifications" SET "status" = 'sent', "attempts" = "attempts" + 1, "sentAt" = $1,
           "nextAttemptAt" = NULL, "lastError" = NULL WHERE "id" = $2`,
        [at, id],
      );
      if (macs.length > 0) {
        await c.query(`UPDATE "Devices" SET "devLastNotification" = $1 WHERE "devMac" = ANY($2::text[])`, [
          at,
          [...macs],
        ]);
      }
    });
  }

  async retryLater(id: number, nextAttemptAtMs: number, error: string): Promise<void> {
    await this.store.query(
      `UPDATE "Notifications" SET "attempts" = "attempts" + 1, "nextAttemptAt" = $1, "lastError" = $2 WHERE "id" = $3`,
      [nextAttemptAtMs, error, id],
    );
  }

  async failed(id: number, error: string): Promise<void> {
    await this.store.query(
      `UPDATE "Notifications" SET "status" = 'failed', "attempts" = "attempts" + 1, "nextAttemptAt" = NULL,
         "lastError" = $1 WHERE "id" = $2`,
      [error, id],
    );
  }

  /** Every pending row of the channel failed with `error`; how many. */
  async failPending(channel: ChannelName, error: string): Promise<number> {
    const rows = await this.store.query<{ id: number }>(
      `UPDATE "Notifications" SET "status" = 'failed', "nextAttemptAt" = NULL, "lastError" = $1
       WHERE "status" = 'pending' AND "channel" = $2 RETURNING "id"`,
      [error, channel],
    );
    return rows.length;
  }

  /** A page, newest first, optionally of one status, each with its preview. */
  async list(
    status: NotificationStatus | undefined,
    offset: number,
    limit: number,
  ): Promise<{ total: number; notifications: NotificationView[] }> {
    const filter = status ?? null;
    const [count] = await this.store.query<{ total: number }>(
      `SELECT count(*)::bigint AS total FROM "Notifications" WHERE $1::text IS NULL OR "status" = $1`,
      [filter],
    );
    const rows = await this.store.query<{
      id: number;
      deliveryId: string;
      channel: ChannelName;
      status: NotificationStatus;
      attempts: number;
      createdAt: string;
      sentAt: string | null;
      lastError: string | null;
      eventCount: number;
      preview: string;
    }>(
      `SELECT n."id", n."deliveryId", n."channel", n."status", n."attempts", n."createdAt", n."sentAt",
         n."lastError", p."eventCount", p."preview"
       FROM "Notifications" n JOIN "NotificationPayloads" p ON p."id" = n."payloadId"
       WHERE $1::text IS NULL OR n."status" = $1
       ORDER BY n."id" DESC LIMIT $2 OFFSET $3`,
      [filter, limit, offset],
    );
    return {
      total: count?.total ?? 0,
      notifications: rows.map((row) => ({
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
      })),
    };
  }

  /** Deletes up to `limit` sent/failed/skipped rows older than `before`, then their unused payloads. */
  async pruneBatch(before: Date, limit: number): Promise<OutboxPruneBatch> {
    return this.store.transaction(async (c) => {
      // Pending rows are never pruned: they are still to be delivered, however old.
      const deleted = await c.query<{ payloadId: number }>(
        `DELETE FROM "Notifications" WHERE "id" IN (
           SELECT "id" FROM "Notifications" WHERE "status" IN ('sent', 'failed', 'skipped') AND "createdAt" < $1
           ORDER BY "id" LIMIT $2)
         RETURNING "payloadId"`,
        [dbTime(before), limit],
      );
      const candidates = [...new Set(deleted.rows.map((r) => r.payloadId))];
      const payloads = await c.query<{ id: number }>(
        `DELETE FROM "NotificationPayloads" p WHERE p."id" = ANY($1::bigint[])
           AND NOT EXISTS (SELECT 1 FROM "Notifications" n WHERE n."payloadId" = p."id")
         RETURNING p."id"`,
        [candidates],
      );
      const payloadIds = payloads.rows.map((r) => r.id).sort((a, b) => a - b);
      return { notifications: deleted.rows.length, payloads: payloadIds.length, payloadIds };
    });
  }

  async countsByChannelAndStatus(): Promise<
    Array<{ channel: ChannelName; status: NotificationStatus; count: number }>
  > {
    return this.store.query(
      `SELECT "channel", "status", count(*)::bigint AS count FROM "Notifications" GROUP BY "channel", "status"`,
    );
  }
}
