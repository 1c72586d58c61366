/**
 * The outbox contract, run against both stores: one scenario (a cycle's notifications planned from
 * its devices and written, due rows, retries, sends, failures, the list, the counts, pruning) played on SQLite and
 * on PostgreSQL, and every answer compared. Delivery ids are random in each store and left out.
 * The PostgreSQL outbox claims what `due` returns (a lease, for several servers); in one server's
 * use, which this scenario is, that changes no answer.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { NotificationEvent } from '../../src/alerts/model.js';
import { openDatabase } from '../../src/db/connection.js';
import type { AlertOutboxStore, NotificationBatch, NotifyRequest } from '../../src/store/outbox.js';
import { PostgresOutboxStore } from '../../src/store/postgres/outbox.js';
import { openPostgres, type PostgresPool } from '../../src/store/postgres/pool.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { SqliteOutboxStore } from '../../src/store/sqlite/outbox.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'outbox contract on PostgreSQL');

/** The outbox interface, and how a scan cycle writes its notifications (inside its transaction). */
type Outbox = AlertOutboxStore & { writeRequested(request: NotifyRequest): void | Promise<void> };

const t0 = Date.UTC(2026, 2, 1, 8);
const mac = 'aa:00:00:00:00:01';
const event = (type: string): NotificationEvent => ({ mac, type }) as unknown as NotificationEvent;

/** Plays the scenario; returns every answer, in order. */
async function scenario(outbox: Outbox, addDevice: (sql: string) => Promise<void>): Promise<unknown[]> {
  const log: unknown[] = [];
  const noIds = <T extends { deliveryId: string }>(rows: T[]): Omit<T, 'deliveryId'>[] =>
    rows.map(({ deliveryId: _id, ...rest }) => rest);
  await addDevice(
    `INSERT INTO "Devices" ("devMac", "devName", "devLastIP", "devAlertDown", "devAlertEvents", "devSkipRepeated", "devPresentLastScan")
     VALUES ('${mac}', 'printer', '192.168.1.9', 1, 1, 6, 0)`,
  );
  // A cycle's request: the devices it names (one twice, one that is no device), planned into
  // batches; what the plan was given is part of the answers.
  const request = (createdAt: Date, batches: NotificationBatch[]): NotifyRequest => ({
    macs: [mac, 'aa:00:00:00:00:99', mac],
    createdAt,
    plan: (devices) => {
      log.push([...devices]);
      return batches;
    },
  });
  await outbox.writeRequested(
    request(new Date(t0 - 60_000), [
      {
        status: 'pending',
        reason: null,
        events: [event('Device Down'), event('Connected')],
        preview: [event('Device Down')],
        channels: ['webhook', 'ntfy'],
        dueMs: t0,
      },
      {
        status: 'skipped',
        reason: 'skip repeated',
        events: [event('IP Changed')],
        preview: [],
        channels: ['mqtt'],
        dueMs: null,
      },
    ]),
  );
  log.push(await outbox.nextDue(), await outbox.due('webhook', t0 - 1, 10));
  const [first, ...others] = await outbox.due('webhook', t0, 10);
  assert.ok(first !== undefined && others.length === 0);
  log.push(noIds([first]), await outbox.payload(first.payloadId));
  await outbox.retryLater(first.id, t0 + 30_000, 'HTTP 503');
  const [again] = await outbox.due('webhook', t0 + 30_000, 10);
  assert.ok(again !== undefined);
  log.push(noIds([again]));
  await outbox.sent(again.id, new Date(t0 + 31_000), [mac]);
  await outbox.writeRequested(request(new Date(t0 + 32_000), []));
  log.push(await outbox.failPending('ntfy', 'channel removed'), await outbox.failPending('ntfy', 'again'));
  const all = await outbox.list(undefined, 0, 10);
  log.push(all.total, noIds(all.notifications));
  const sent = await outbox.list('sent', 0, 10);
  log.push(sent.total, noIds(sent.notifications));
  log.push((await outbox.countsByChannelAndStatus()).sort((a, b) => a.channel.localeCompare(b.channel)));
  log.push(await outbox.pruneBatch(new Date(t0), 10), await outbox.pruneBatch(new Date(t0 + 3_600_000), 1));
  log.push(await outbox.pruneBatch(new Date(t0 + 3_600_000), 10), await outbox.nextDue());
  return log;
}

describe('the outbox contract on SQLite and PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let pool: PostgresPool;
  let dir: string;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    pool = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-outbox-contract-'));
  });
  after(async () => {
    await pool.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the same scenario gives the same answers', async () => {
    const db = openDatabase(join(dir, 'netkeep.db'));
    try {
      const lite = await scenario(new SqliteOutboxStore(db, new SqliteDevices(db)), (sql) => {
        db.exec(sql);
        return Promise.resolve();
      });
      const pg = await scenario(new PostgresOutboxStore(pool), async (sql) => {
        await pool.query(sql);
      });
      assert.deepEqual(pg, lite);
      // The scenario reached what it meant to compare.
      assert.equal((lite[0] as [string, { devName: string }][])[0]?.[1].devName, 'printer');
      assert.equal(lite.length, 18);
    } finally {
      db.close();
    }
  });
});
