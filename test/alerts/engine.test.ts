/**
 * The alert engine in one process, on a real SQLite file and real HTTP receivers on 127.0.0.1:
 * the outbox written in the scan cycle's transaction (grouping, skipped rows, rollback), the three
 * HTTP channels' exact requests (signature, ntfy headers, "+N more", Apprise types), retries with
 * the same deliveryId, failure after NOTIFY_MAX_ATTEMPTS, timeouts, one slow receiver not holding
 * another, devLastNotification, and no secret in logs or in the outbox.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { after, afterEach, before, describe, test } from 'node:test';
import pino from 'pino';
import { Alerts } from '../../src/alerts/index.js';
import { backoffMs } from '../../src/alerts/delivery.js';
import type { Delivery, NotificationEvent } from '../../src/alerts/model.js';
import { loadConfig } from '../../src/config.js';
import type { Observation } from '../../src/scanner/discovery.js';
import { planCycle } from '../../src/scanner/state-machine.js';
import { sqliteStore, type SqliteStore } from '../../src/store/sqlite/store.js';
import { ScanStore } from '../helpers/scan-store.js';
import { eventually } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { tempDb, type TempDb } from '../scanner/helpers.js';

const secret = 'webhook-secret-3f9a1c';
const ntfyToken = 'tk_ntfy_secret_77aa';

function mac(i: number): string {
  return `02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;
}

function seen(...indexes: number[]): Map<string, Observation> {
  return new Map(indexes.map((i) => [mac(i), { ips: [`10.9.0.${i}`], vendor: 'Acme', source: 'arp-scan' }]));
}

interface Harness {
  readonly handle: TempDb;
  readonly store: ScanStore;
  readonly sqlite: SqliteStore;
  readonly alerts: Alerts;
  readonly logs: string[];
  cycle(observations: Map<string, Observation>, now: Date): void;
  stop(): Promise<void>;
}

function harness(env: Record<string, string>): Harness {
  const handle = tempDb();
  const sqlite = sqliteStore(handle.db);
  const store = new ScanStore(sqlite.core, sqlite);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  const config = loadConfig(
    { NOTIFY_RETRY_BASE_MS: '100', NOTIFY_TIMEOUT_MS: '2000', ...env },
    '/nonexistent',
  );
  const alerts = new Alerts({ outboxStore: sqlite.outbox, readouts: sqlite.readouts, config, logger });
  void alerts.start();
  return {
    handle,
    store,
    sqlite,
    alerts,
    logs,
    cycle(observations, now) {
      // The scanner's flap window (FLAP_WINDOW_MINUTES default 60) and threshold (6).
      const known = store.loadState(new Date(now.getTime() - 3_600_000));
      const plan = planCycle({ known, observations, missesBeforeAbsent: 1, now });
      store.apply(plan, { notify: alerts.outbox.request(plan.events, now) });
    },
    async stop() {
      await alerts.stop();
      handle.remove();
    },
  };
}

function rows(h: Harness, status?: string): Array<Record<string, unknown>> {
  return h.handle.db
    .prepare(
      'SELECT n.*, p.events FROM Notifications n JOIN NotificationPayloads p ON p.id = n.payloadId WHERE ? IS NULL OR n.status = ? ORDER BY n.id',
    )
    .all(status ?? null, status ?? null) as Array<Record<string, unknown>>;
}

function events(row: Record<string, unknown> | undefined): NotificationEvent[] {
  assert.ok(row);
  return JSON.parse(String(row.events)) as NotificationEvent[];
}

/**
 * A hostile receiver on 127.0.0.1: answers 500 with a body of up to `offered` bytes (plain, or a
 * gzip bomb of that many decompressed bytes sent whatever the request accepts), written as fast
 * as the client takes them, then keeps the answer open without ending it. It counts the bytes the
 * client's socket accepted and whether the client hung up while the answer was still open.
 */
interface HostileReceiver {
  readonly url: string;
  /** Bytes of the body written so far (compressed bytes for the bomb). */
  readonly written: () => number;
  /** The client closed the connection before the answer ended. */
  readonly hungUp: () => boolean;
  /** The Accept-Encoding the request carried. */
  readonly acceptEncoding: () => string | undefined;
  close(): Promise<void>;
}

async function startHostileReceiver(kind: 'plain' | 'gzip', offered: number): Promise<HostileReceiver> {
  let written = 0;
  let hungUp = false;
  let acceptEncoding: string | undefined;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  function* body(): Generator<Buffer> {
    for (let sent = 0; sent < offered; sent += chunk.length) yield chunk;
  }
  const hold = (res: ServerResponse): void => {
    // Never ends the answer: only a client that stops reading on its own gets done.
    res.once('close', () => {
      if (!res.writableEnded) hungUp = true;
    });
  };
  const server: Server = createServer((req, res) => {
    acceptEncoding = req.headers['accept-encoding'];
    req.resume();
    req.on('end', () => {
      hold(res);
      if (kind === 'plain') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        const source = Readable.from(body());
        source.on('data', (data: Buffer) => {
          written += data.length;
          if (!res.write(data)) source.pause();
        });
        res.on('drain', () => source.resume());
        res.once('close', () => source.destroy());
      } else {
        res.writeHead(500, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
        const gzip = createGzip({ level: 9 });
        gzip.on('data', (data: Buffer) => {
          written += data.length;
          if (!res.write(data)) gzip.pause();
        });
        res.on('drain', () => gzip.resume());
        res.once('close', () => gzip.destroy());
        const source = Readable.from(body());
        source.pipe(gzip, { end: false });
        // Everything compressed so far goes out, the gzip stream itself is never finished.
        source.on('end', () => {
          gzip.flush();
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    written: () => written,
    hungUp: () => hungUp,
    acceptEncoding: () => acceptEncoding,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}

describe('alert engine (in process, real SQLite, receivers on 127.0.0.1)', () => {
  let receiver: Receiver;
  let current: Harness | undefined;
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
  });
  afterEach(async () => {
    await current?.stop();
    current = undefined;
    receiver.requests.length = 0;
    receiver.status = 200;
    receiver.delayMs = 0;
  });

  function start(env: Record<string, string>): Harness {
    current = harness(env);
    return current;
  }

  const allHttp = (): Record<string, string> => ({
    NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
    NOTIFY_WEBHOOK_SECRET: secret,
    NOTIFY_NTFY_URL: receiver.url('/ntfy/netkeep'),
    NOTIFY_NTFY_TOKEN: ntfyToken,
    NOTIFY_APPRISE_URL: receiver.url('/apprise/notify/netkeep'),
  });

  test('a flapping device: one Flapping notified, its later comings and goings skipped as flapping', async () => {
    const h = start({ NOTIFY_WEBHOOK_URL: receiver.url('/hook') });
    const t0 = Date.parse('2025-03-01T12:00:00Z');
    const at = (minutes: number): Date => new Date(t0 + minutes * 60_000);
    h.cycle(seen(1, 2), at(0));
    h.handle.db
      .prepare('UPDATE Devices SET devAlertDown = 1, devAlertEvents = 1 WHERE devMac = ?')
      .run(mac(1));
    // Device 1 away and back every 5 minutes; device 2 stays.
    for (let i = 1; i <= 8; i++) h.cycle(i % 2 === 0 ? seen(1, 2) : seen(2), at(i * 5));
    const notified = rows(h, 'pending')
      .concat(rows(h, 'sent'))
      .flatMap((row) => events(row).map((e) => e.type));
    // Changes 1-5 are notified (Device Down, Down Reconnected, ...); the 6th (Down Reconnected)
    // starts the flapping: its Flapping is notified, it and the later ones are skipped.
    assert.deepEqual(
      notified.filter((type) => type !== 'New Device'),
      ['Device Down', 'Down Reconnected', 'Device Down', 'Down Reconnected', 'Device Down', 'Flapping'],
    );
    const flapSkipped = rows(h, 'skipped').filter((row) => row.lastError === 'flapping');
    assert.deepEqual(
      flapSkipped.flatMap((row) => events(row).map((e) => e.type)),
      ['Down Reconnected', 'Device Down', 'Down Reconnected'],
    );
    assert.ok(flapSkipped.flatMap((row) => events(row)).every((e) => e.mac === mac(1)));
    assert.equal(rows(h, 'skipped').length, flapSkipped.length);
  });

  test('one delivery per channel per cycle, carrying every notified event, with the exact shapes', async () => {
    const h = start(allHttp());
    h.cycle(seen(1, 2, 3), new Date('2025-03-01T12:00:00Z'));
    const [hook] = await receiver.waitFor('/hook');
    const [ntfy] = await receiver.waitFor('/ntfy/netkeep');
    const [apprise] = await receiver.waitFor('/apprise/notify/netkeep');
    assert.ok(hook && ntfy && apprise);

    // Webhook: the JSON body, signed over its exact bytes.
    const body = JSON.parse(hook.body) as Delivery & { source: string };
    assert.equal(hook.headers['content-type'], 'application/json');
    assert.equal(
      hook.headers['x-netkeep-signature'],
      `sha256=${createHmac('sha256', secret).update(Buffer.from(hook.body, 'utf8')).digest('hex')}`,
    );
    assert.match(body.deliveryId, /^[0-9a-f-]{36}$/);
    assert.equal(body.source, 'netkeep');
    assert.ok(!Number.isNaN(Date.parse(body.sentAt)));
    assert.deepEqual(body.events[0], {
      type: 'New Device',
      time: '2025-03-01T12:00:00Z',
      mac: mac(1),
      ip: '10.9.0.1',
      additionalInfo: '',
      device: {
        devName: '(unknown)',
        devOwner: '',
        devType: '',
        devVendor: 'Acme',
        devLastIP: '10.9.0.1',
        devStatus: 'On-line',
        devRandomMac: 1,
      },
    });
    assert.deepEqual(
      body.events.map((e) => e.mac),
      [mac(1), mac(2), mac(3)],
    );

    // ntfy: plain text, one line per event, title/priority/tags, the bearer token.
    assert.equal(ntfy.headers.authorization, `Bearer ${ntfyToken}`);
    assert.equal(ntfy.headers.priority, 'default');
    assert.equal(ntfy.headers.title, 'netkeep: 3 network events (New Device)');
    assert.equal(ntfy.headers.tags, 'netkeep,new');
    assert.deepEqual(ntfy.body.split('\n'), [
      `New Device: Acme (${mac(1)}) 10.9.0.1`,
      `New Device: Acme (${mac(2)}) 10.9.0.2`,
      `New Device: Acme (${mac(3)}) 10.9.0.3`,
    ]);
    // Apprise: JSON {title, body, type}; warning for a New Device.
    assert.deepEqual(JSON.parse(apprise.body), {
      title: ntfy.headers.title,
      body: ntfy.body,
      type: 'warning',
    });

    // The outbox: one sent row per channel, distinct deliveryIds, the webhook's is the one received.
    await eventually(() => rows(h, 'sent').length === 3);
    const sent = rows(h, 'sent');
    assert.deepEqual(sent.map((r) => r.channel).sort(), ['apprise', 'ntfy', 'webhook']);
    assert.equal(new Set(sent.map((r) => r.deliveryId)).size, 3);
    assert.equal(sent.find((r) => r.channel === 'webhook')?.deliveryId, body.deliveryId);
    assert.ok(sent.every((r) => r.attempts === 1 && r.lastError === null));
    // devLastNotification is the send time.
    const last = h.handle.db
      .prepare('SELECT devLastNotification FROM Devices WHERE devMac = ?')
      .get(mac(1)) as {
      devLastNotification: string | null;
    };
    assert.match(String(last.devLastNotification), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);

    // Secrets appear in no log line and nowhere in the outbox.
    const everything = h.logs.join('') + JSON.stringify(rows(h));
    assert.ok(!everything.includes(secret));
    assert.ok(!everything.includes(ntfyToken));
  });

  test('flags decide: Device Down with devAlertDown (high priority, failure), nothing without flags', async () => {
    const h = start(allHttp());
    h.cycle(seen(1, 2, 3), new Date('2025-03-01T12:00:00Z'));
    await receiver.waitFor('/hook');
    const db = h.handle.db;
    db.prepare('UPDATE Devices SET devAlertDown = 1 WHERE devMac = ?').run(mac(1));
    db.prepare('UPDATE Devices SET devAlertEvents = 0, devAlertDown = 0 WHERE devMac = ?').run(mac(2));
    // 3 keeps devAlertEvents = 1 (the default): its Disconnected is notified.
    receiver.requests.length = 0;
    h.cycle(seen(), new Date('2025-03-01T12:05:00Z'));
    const [hook] = await receiver.waitFor('/hook');
    const [ntfy] = await receiver.waitFor('/ntfy/netkeep');
    const [apprise] = await receiver.waitFor('/apprise/notify/netkeep');
    const body = JSON.parse(hook?.body ?? '') as Delivery;
    assert.deepEqual(
      body.events.map((e) => [e.type, e.mac, e.device.devStatus]),
      [
        ['Device Down', mac(1), 'Down'],
        ['Disconnected', mac(3), 'Off-line'],
      ],
    );
    assert.equal(ntfy?.headers.priority, 'high');
    assert.equal(ntfy.headers.tags, 'netkeep,rotating_light');
    assert.equal((JSON.parse(apprise?.body ?? '') as { type: string }).type, 'failure');

    // Back again: Down Reconnected (devAlertDown) and Connected (devAlertEvents) only: success.
    receiver.requests.length = 0;
    h.cycle(seen(1, 2, 3), new Date('2025-03-01T12:10:00Z'));
    const [again] = await receiver.waitFor('/apprise/notify/netkeep');
    assert.equal((JSON.parse(again?.body ?? '') as { type: string }).type, 'success');
    const [hook2] = await receiver.waitFor('/hook');
    assert.deepEqual(
      (JSON.parse(hook2?.body ?? '') as Delivery).events.map((e) => [e.type, e.mac]),
      [
        ['Down Reconnected', mac(1)],
        ['Connected', mac(3)],
      ],
    );

    // A cycle whose only event is unflagged writes nothing at all.
    const before = rows(h).length;
    h.cycle(seen(1, 3), new Date('2025-03-01T12:15:00Z')); // 2 leaves: no flags
    assert.equal(rows(h).length, before);
  });

  test('devSkipRepeated: within the window recorded as skipped (one row per channel), never sent', async () => {
    const h = start({
      NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
      NOTIFY_EVENTS: 'Connected,Disconnected,New Device',
    });
    h.cycle(seen(1), new Date('2025-03-01T12:00:00Z'));
    await receiver.waitFor('/hook');
    await eventually(() => rows(h, 'sent').length === 1);
    // Sent "now" (wall clock); cycles dated after it, within 24 hours.
    h.handle.db.prepare('UPDATE Devices SET devSkipRepeated = 24 WHERE devMac = ?').run(mac(1));
    const soon = new Date(Date.now() + 3_600_000);
    h.cycle(seen(), soon);
    const skipped = rows(h, 'skipped');
    assert.equal(skipped.length, 1);
    assert.deepEqual(
      events(skipped[0]).map((e) => e.type),
      ['Disconnected'],
    );
    assert.equal(skipped[0]?.nextAttemptAt, null);
    // After the window: sent again.
    h.cycle(seen(1), new Date(Date.now() + 25 * 3_600_000));
    await receiver.waitFor('/hook', 2);
    assert.equal(rows(h, 'skipped').length, 1);
  });

  test('the outbox rows are part of the cycle transaction: a failed commit leaves neither', () => {
    const h = start({ NOTIFY_WEBHOOK_URL: receiver.url('/hook') });
    const now = new Date('2025-03-01T12:00:00Z');
    const plan = planCycle({
      known: h.store.loadState(),
      observations: seen(1, 2),
      missesBeforeAbsent: 1,
      now,
    });
    assert.throws(() => {
      h.store.apply(plan, {
        notify: h.alerts.outbox.request(plan.events, now),
        testOnlyBeforeCommit: () => {
          assert.equal(rows(h).length, 1); // written inside the transaction...
          throw new Error('crash before COMMIT');
        },
      });
    }, /crash before COMMIT/);
    assert.equal(rows(h).length, 0); // ...and rolled back with the cycle
    assert.equal((h.handle.db.prepare('SELECT COUNT(*) AS n FROM Devices').get() as { n: number }).n, 0);
  });

  test('a receiver answering 500 is retried with the same deliveryId until it recovers', async () => {
    receiver.status = 500;
    const h = start({ NOTIFY_WEBHOOK_URL: receiver.url('/hook') });
    h.cycle(seen(1), new Date('2025-03-01T12:00:00Z'));
    await receiver.waitFor('/hook', 3);
    const pending = rows(h, 'pending');
    assert.equal(pending.length, 1);
    assert.match(String(pending[0]?.lastError), /^HTTP 500/);
    receiver.status = 200;
    await eventually(() => rows(h, 'sent').length === 1, 200);
    const ids = receiver.on('/hook').map((r) => (JSON.parse(r.body) as Delivery).deliveryId);
    assert.ok(ids.length >= 4);
    assert.equal(new Set(ids).size, 1);
    const [sent] = rows(h, 'sent');
    assert.equal(sent?.deliveryId, ids[0]);
    assert.equal(sent?.attempts, ids.length);
    assert.equal(sent.lastError, null);
  });

  test('after NOTIFY_MAX_ATTEMPTS the row is failed with the last error; a timeout is an error', async () => {
    receiver.delayMs = 1000;
    const h = start({
      NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
      NOTIFY_MAX_ATTEMPTS: '2',
      NOTIFY_TIMEOUT_MS: '200',
    });
    h.cycle(seen(1), new Date('2025-03-01T12:00:00Z'));
    assert.ok(await eventually(() => rows(h, 'failed').length === 1, 200));
    const [failed] = rows(h, 'failed');
    assert.equal(failed?.attempts, 2);
    assert.equal(failed.lastError, 'no confirmation within 200 ms (NOTIFY_TIMEOUT_MS)');
    const dev = h.handle.db.prepare('SELECT devLastNotification FROM Devices').get() as {
      devLastNotification: string | null;
    };
    assert.equal(dev.devLastNotification, null);
  });

  test('a slow receiver does not hold another channel', async () => {
    const slow = await startReceiver();
    slow.delayMs = 1500;
    try {
      const h = start({ NOTIFY_WEBHOOK_URL: slow.url('/hook'), NOTIFY_NTFY_URL: receiver.url('/ntfy/t') });
      for (let i = 0; i < 4; i++) h.cycle(seen(i + 1), new Date(Date.UTC(2025, 2, 1, 12, i)));
      // All four ntfy deliveries arrive while the webhook's first ones are still waiting for answers.
      await receiver.waitFor('/ntfy/t', 4);
      assert.ok(slow.requests.length <= 2, `webhook attempts so far: ${slow.requests.length}`);
    } finally {
      await current?.stop();
      current = undefined;
      await slow.close();
    }
  });

  test('ntfy shows 20 lines and "+N more"; user:password in a URL becomes Basic auth, never logged', async () => {
    const h = start({
      NOTIFY_NTFY_URL: `http://alice:pa55word@127.0.0.1:${receiver.port}/ntfy/t`,
      NOTIFY_APPRISE_URL: receiver.url('/apprise/notify/netkeep'),
    });
    h.cycle(seen(...Array.from({ length: 25 }, (_, i) => i + 1)), new Date('2025-03-01T12:00:00Z'));
    const [ntfy] = await receiver.waitFor('/ntfy/t');
    const lines = ntfy?.body.split('\n') ?? [];
    assert.equal(lines.length, 21);
    assert.equal(lines[20], '+5 more');
    assert.equal(ntfy?.headers.authorization, `Basic ${Buffer.from('alice:pa55word').toString('base64')}`);
    await receiver.waitFor('/apprise/notify/netkeep');
    assert.ok(h.logs.some((l) => l.includes('"event":"alerts-channels"')));
    assert.ok(!h.logs.join('').includes('pa55word'));
  });

  test('POST /notifications/test logic: per-channel results, a failing receiver is ok: false', async () => {
    const gone = await startReceiver();
    await gone.close(); // nothing listens on its port any more
    const h = start({ NOTIFY_WEBHOOK_URL: receiver.url('/hook'), NOTIFY_NTFY_URL: gone.url('/nothing') });
    const results = await h.alerts.test();
    assert.deepEqual(results[0], { channel: 'webhook', ok: true, error: null });
    assert.equal(results[1]?.channel, 'ntfy');
    assert.equal(results[1].ok, false);
    assert.match(String(results[1].error), /ECONNREFUSED/);
    const [hook] = await receiver.waitFor('/hook');
    const body = JSON.parse(hook?.body ?? '') as Record<string, unknown>;
    assert.equal(body.test, true);
    assert.deepEqual(body.events, []);
    assert.equal(rows(h).length, 0);
  });

  test('a 500 with a huge body that never ends: the error keeps 200 characters, the rest is never read', async () => {
    const offered = 64 * 1024 * 1024;
    const hostile = await startHostileReceiver('plain', offered);
    try {
      const h = start({ NOTIFY_WEBHOOK_URL: hostile.url, NOTIFY_MAX_ATTEMPTS: '1' });
      h.cycle(seen(1), new Date('2025-03-01T12:00:00Z'));
      assert.ok(await eventually(() => rows(h, 'failed').length === 1, 400));
      const [failed] = rows(h, 'failed');
      // Recorded as the receiver's error, not as a timeout: nothing waited for the body's end.
      assert.equal(failed?.lastError, `HTTP 500 Internal Server Error: ${'x'.repeat(200)}...`);
      // The client hung up while the receiver was still able to send: what it wrote is what the
      // sockets' buffers took, a few MiB at most, not the 64 MiB offered.
      assert.ok(await eventually(() => hostile.hungUp(), 200));
      assert.ok(hostile.written() < 16 * 1024 * 1024, `receiver wrote ${hostile.written()} bytes`);
    } finally {
      await current?.stop();
      current = undefined;
      await hostile.close();
    }
  });

  test('a 500 that is a gzip bomb: asked for identity, never decompressed, the delivery records the error', async () => {
    // 256 MiB of decompressed text in about 256 KiB of gzip, and the stream never ends.
    const hostile = await startHostileReceiver('gzip', 256 * 1024 * 1024);
    try {
      const h = start({ NOTIFY_WEBHOOK_URL: hostile.url, NOTIFY_MAX_ATTEMPTS: '1' });
      h.cycle(seen(1), new Date('2025-03-01T12:00:00Z'));
      assert.ok(await eventually(() => rows(h, 'failed').length === 1, 400));
      const [failed] = rows(h, 'failed');
      assert.equal(failed?.lastError, 'HTTP 500 Internal Server Error: (a body in gzip encoding, not read)');
      assert.equal(hostile.acceptEncoding(), 'identity');
      assert.ok(await eventually(() => hostile.hungUp(), 200));
    } finally {
      await current?.stop();
      current = undefined;
      await hostile.close();
    }
  });

  test('pending rows of a channel that is no longer configured are failed at start', async () => {
    receiver.status = 500;
    const h = start({ NOTIFY_WEBHOOK_URL: receiver.url('/hook') });
    h.cycle(seen(1), new Date('2025-03-01T12:00:00Z'));
    await receiver.waitFor('/hook');
    await h.alerts.stop();
    const config = loadConfig({}, '/nonexistent');
    const again = new Alerts({
      outboxStore: h.sqlite.outbox,
      readouts: h.sqlite.readouts,
      config,
      logger: pino({ level: 'silent' }),
    });
    await again.start();
    const [row] = rows(h);
    assert.equal(row?.status, 'failed');
    assert.equal(row.lastError, 'channel webhook is not configured');
    await again.stop();
  });

  test('NOTIFY_RETENTION_DAYS: at start, old sent, failed and skipped rows go with their payloads; pending ones stay', async () => {
    receiver.status = 500; // nothing is confirmed: every row stays pending until the test sets it
    const env = {
      NOTIFY_WEBHOOK_URL: receiver.url('/hook'),
      NOTIFY_NTFY_URL: receiver.url('/ntfy/t'),
      NOTIFY_RETRY_BASE_MS: '30000',
    };
    const h = start(env);
    // Five cycles 40+ days before 2025-03-01 (one row per channel each), then one 10 days before.
    for (let day = 1; day <= 5; day++) h.cycle(seen(day), new Date(Date.UTC(2025, 0, day, 12)));
    h.cycle(seen(6), new Date('2025-02-19T12:00:00Z'));
    await h.alerts.stop();
    const setStatus = h.handle.db.prepare(
      'UPDATE Notifications SET status = ?, nextAttemptAt = NULL WHERE payloadId = ? AND channel IN (?, ?)',
    );
    setStatus.run('sent', 1, 'webhook', 'ntfy');
    setStatus.run('failed', 2, 'webhook', 'ntfy');
    setStatus.run('skipped', 3, 'webhook', 'ntfy');
    // Payload 4: both rows still pending. Payload 5: the webhook's sent, ntfy's pending.
    setStatus.run('sent', 5, 'webhook', 'webhook');
    setStatus.run('sent', 6, 'webhook', 'ntfy'); // recent: kept
    assert.equal(rows(h).length, 12);

    const again = new Alerts({
      outboxStore: h.sqlite.outbox,
      readouts: h.sqlite.readouts,
      config: loadConfig({ ...env, NOTIFY_RETENTION_DAYS: '30' }, '/nonexistent'),
      logger: pino({ level: 'silent' }),
      now: () => new Date('2025-03-01T12:00:00Z'),
    });
    try {
      await again.start(); // the prune runs on the next turn of the event loop
      assert.ok(await eventually(() => rows(h).length === 5, 200), `rows left: ${rows(h).length}`);
      const left = h.handle.db
        .prepare('SELECT payloadId, channel, status FROM Notifications ORDER BY payloadId, channel')
        .all();
      assert.deepEqual(left, [
        { payloadId: 4, channel: 'ntfy', status: 'pending' },
        { payloadId: 4, channel: 'webhook', status: 'pending' },
        { payloadId: 5, channel: 'ntfy', status: 'pending' },
        { payloadId: 6, channel: 'ntfy', status: 'sent' },
        { payloadId: 6, channel: 'webhook', status: 'sent' },
      ]);
      // Payloads 1-3 went with their rows; 5 stays for its pending row.
      const payloads = h.handle.db.prepare('SELECT id FROM NotificationPayloads ORDER BY id').pluck().all();
      assert.deepEqual(payloads, [4, 5, 6]);
    } finally {
      await again.stop();
    }
  });

  test('backoff: doubles from the base, first retry within 30 s, jittered, at most an hour', () => {
    assert.equal(
      backoffMs(1, 15_000, () => 1),
      15_000,
    );
    assert.equal(
      backoffMs(1, 15_000, () => 0),
      11_250,
    );
    assert.equal(
      backoffMs(2, 15_000, () => 1),
      30_000,
    );
    assert.equal(
      backoffMs(3, 15_000, () => 1),
      60_000,
    );
    assert.equal(
      backoffMs(20, 15_000, () => 1),
      3_600_000,
    );
    assert.ok(backoffMs(1, 30_000) <= 30_000);
  });
});
