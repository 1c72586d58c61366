/**
 * Child process of the alert benchmark: the device routes and the alert engine in one process
 * (the parts of the server that share an event loop during deliveries), on BENCH_DB, listening on
 * HOST:PORT, with the channels of the NOTIFY_* / MQTT_* environment. On a `cycle` line on stdin it
 * applies the measured scan cycle exactly as the scanner does (load, plan, apply with the outbox
 * written before COMMIT, then the change feed) and prints `{"cycleMs", "committedAt", "events"}`.
 * Prints `{"ready":true}` once listening.
 */
import { createInterface } from 'node:readline';
import pino from 'pino';
import { Alerts } from '../src/alerts/index.js';
import notificationsRoutes from '../src/alerts/routes.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connection.js';
import { sqliteStore } from '../src/store/sqlite/store.js';
import deviceRoutes from '../src/devices/routes.js';
import { ChangeFeed } from '../src/events.js';
import { buildApp } from '../src/http/app.js';
import { planCycle } from '../src/scanner/state-machine.js';
import { ScanStore } from '../test/helpers/scan-store.js';
import { measuredObservations } from './alerts-world.js';
import { benchToken } from './lib.js';

const config = loadConfig({ ...process.env, API_TOKEN: benchToken }, '/nonexistent');
const logger = pino({ level: 'warn' });
const db = openDatabase(process.env.BENCH_DB ?? '');
const app = await buildApp({ token: benchToken, bodyLimit: config.BODY_LIMIT, logger: false });
const feed = new ChangeFeed(logger);
const sqlite = sqliteStore(db);
await app.register(deviceRoutes, { repository: sqlite.devices, feed });
const alerts = new Alerts({
  outboxStore: sqlite.outbox,
  readouts: sqlite.readouts,
  config,
  logger,
  feed,
});
await app.register(notificationsRoutes, { alerts });
const store = new ScanStore(sqlite.core, sqlite);
await app.listen({ port: config.PORT, host: config.HOST });
await alerts.start();
console.log(JSON.stringify({ ready: true }));

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'cycle') return;
  const started = performance.now();
  const known = store.loadState();
  const now = new Date();
  const plan = planCycle({ known, observations: measuredObservations(), missesBeforeAbsent: 1, now });
  store.apply(plan, { notify: alerts.outbox.request(plan.events, now) });
  const cycleMs = performance.now() - started;
  const committedAt = Date.now();
  feed.publish('scan-applied', {
    events: plan.events.map((e) => ({ ...e, time: e.dateTime })),
    presence: [
      ...plan.newDevices.map((d) => ({ mac: d.devMac, present: true })),
      ...plan.updates
        .filter((u) => known.get(u.mac)?.presentLastScan !== (u.presentLastScan === 1))
        .map((u) => ({ mac: u.mac, present: u.presentLastScan === 1 })),
    ],
  });
  console.log(JSON.stringify({ cycleMs, committedAt, events: plan.events.length }));
});

process.on('SIGTERM', () => {
  void (async () => {
    await app.close();
    await alerts.stop();
    db.close();
    process.exit(0);
  })();
});
