/**
 * The alert outbox on PostgreSQL shared by two servers: each due notification is claimed by one
 * server (FOR UPDATE SKIP LOCKED and a lease), so none is sent twice while both run; the rows of a
 * server that died mid-delivery come due again when its lease ends and the other server sends
 * them. Times are parameters (nowMs), so nothing here waits for a clock.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { NotificationEvent } from '../../../src/alerts/model.js';
import type { NotificationBatch } from '../../../src/store/outbox.js';
import { PostgresOutboxStore } from '../../../src/store/postgres/outbox.js';
import { openPostgres, type PostgresPool } from '../../../src/store/postgres/pool.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL outbox tests');
const t0 = Date.UTC(2026, 0, 1);
const lease = 60_000;

function batch(
  events: number,
  dueMs: number | null,
  status: 'pending' | 'skipped' = 'pending',
): NotificationBatch {
  const list = Array.from(
    { length: events },
    (_, i) =>
      ({
        mac: `aa:00:00:00:00:${String(i % 100).padStart(2, '0')}`,
        type: 'Device Down',
      }) as unknown as NotificationEvent,
  );
  return {
    status,
    reason: status === 'skipped' ? 'quiet hours' : null,
    events: list,
    preview: list.slice(0, 20),
    channels: ['webhook'],
    dueMs,
  };
}

describe('the outbox shared by two servers', { skip }, () => {
  let server: PostgresServer;
  let a: PostgresPool;
  let b: PostgresPool;
  let outboxA: PostgresOutboxStore;
  let outboxB: PostgresOutboxStore;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    a = await openPostgres(server.url);
    b = await openPostgres(server.url);
    outboxA = new PostgresOutboxStore(a, { claimLeaseMs: lease });
    outboxB = new PostgresOutboxStore(b, { claimLeaseMs: lease });
  });
  after(async () => {
    await a.close();
    await b.close();
    await server.stop();
  });

  test('both servers deliver at once: every notification is sent exactly once', async () => {
    await outboxA.writeNotifications(
      Array.from({ length: 150 }, () => batch(1, t0)),
      new Date(t0),
    );
    const sentBy = new Map<number, string[]>();
    const deliver = async (name: string, outbox: PostgresOutboxStore): Promise<void> => {
      for (;;) {
        const rows = await outbox.due('webhook', t0, 7);
        if (rows.length === 0) return;
        for (const row of rows) {
          sentBy.set(row.id, [...(sentBy.get(row.id) ?? []), name]);
          await outbox.sent(row.id, new Date(t0), []);
        }
      }
    };
    await Promise.all([
      deliver('A', outboxA),
      deliver('B', outboxB),
      deliver('A2', outboxA),
      deliver('B2', outboxB),
    ]);
    assert.equal(sentBy.size, 150);
    const twice = [...sentBy].filter(([, by]) => by.length > 1);
    assert.deepEqual(twice, [], 'no notification was sent twice');
    const senders = new Set([...sentBy.values()].flat().map((n) => n[0]));
    assert.deepEqual([...senders].sort(), ['A', 'B'], 'both servers took part');
    assert.deepEqual(await outboxA.countsByChannelAndStatus(), [
      { channel: 'webhook', status: 'sent', count: 150 },
    ]);
  });

  test('a server that dies mid-delivery: its claimed rows are sent by the other when the lease ends', async () => {
    await outboxA.writeNotifications([batch(3, t0), batch(2, t0)], new Date(t0));
    const claimed = await outboxA.due('webhook', t0, 10);
    assert.equal(claimed.length, 2);
    // A dies here: it never marks them.
    assert.deepEqual(await outboxB.due('webhook', t0 + 1000, 10), [], 'claimed rows are not sent twice');
    assert.equal(await outboxB.nextDue(), t0 + lease, 'they come due again at the end of the lease');
    const taken = await outboxB.due('webhook', t0 + lease, 10);
    assert.deepEqual(
      taken.map((r) => [r.id, r.deliveryId, r.attempts]),
      claimed.map((r) => [r.id, r.deliveryId, r.attempts]),
      'the same deliveries (same deliveryId), attempts not counted by a claim',
    );
    for (const row of taken) {
      assert.equal((await outboxB.payload(row.payloadId)).length > 0, true);
      await outboxB.retryLater(row.id, t0 + 2 * lease, 'HTTP 503');
    }
    const retried = await outboxA.due('webhook', t0 + 2 * lease, 10);
    assert.deepEqual(
      retried.map((r) => r.attempts),
      [1, 1],
    );
    await outboxA.failed(retried[0]?.id ?? 0, 'gave up');
    assert.equal(await outboxA.failPending('webhook', 'channel removed'), 1);
    assert.equal(await outboxA.nextDue(), null);
  });

  test('list, sent (devLastNotification) and prune keep the SQLite outbox meaning', async () => {
    await a.query(`INSERT INTO "Devices" ("devMac") VALUES ('aa:00:00:00:00:01')`);
    await outboxA.writeNotifications([batch(25, t0), batch(1, null, 'skipped')], new Date(t0 + 5000));
    const page = await outboxA.list(undefined, 0, 2);
    assert.equal(page.total, 150 + 2 + 2);
    assert.deepEqual(
      page.notifications.map((n) => [n.status, n.eventCount, n.events.length, n.lastError]),
      [
        ['skipped', 1, 1, 'quiet hours'],
        ['pending', 25, 20, null],
      ],
    );
    assert.equal((await outboxA.list('skipped', 0, 10)).total, 1);
    const [pending] = await outboxA.due('webhook', t0 + 5000, 1);
    assert.ok(pending !== undefined);
    await outboxA.sent(pending.id, new Date(t0 + 6000), ['aa:00:00:00:00:01']);
    const [device] = await a.query<{ devLastNotification: string }>(
      `SELECT "devLastNotification" FROM "Devices"`,
    );
    assert.equal(device?.devLastNotification, '2026-01-01 00:00:06');

    const pruned = await outboxA.pruneBatch(new Date(t0 + 1000), 1000);
    assert.equal(pruned.notifications, 152, 'the sent and failed rows of before');
    assert.equal(pruned.payloads, 152);
    const left = await outboxA.countsByChannelAndStatus();
    assert.deepEqual(
      left.sort((x, y) => x.status.localeCompare(y.status)),
      [
        { channel: 'webhook', status: 'sent', count: 1 },
        { channel: 'webhook', status: 'skipped', count: 1 },
      ],
    );
  });
});
