/**
 * Benchmark of the alert engine: one scan cycle with 1,000 new devices and 1,000 departures (scan
 * results fed in directly, no network; see alerts-world.ts) and all four channels configured
 * against local receivers (an HTTP server and a real mosquitto on 127.0.0.1).
 *
 * 1. Cycle time (load state + plan + apply in one transaction) without channels and with the four
 *    channels (the outbox written before COMMIT), interleaved rounds, each on a fresh copy of the
 *    seeded database. Target: at most 10% slower with channels.
 * 2. In a server child process (device routes + alert engine, alerts-server.ts): the same cycle,
 *    the time from its COMMIT until every delivery has arrived (three HTTP requests and 2,000 MQTT
 *    event messages), and device GET latency at 32 connections for 2 s from the COMMIT on, against
 *    the same load just before the cycle. Target: p99 under 10 ms while deliveries are in flight.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { channelNames } from '../src/alerts/model.js';
import { Outbox } from '../src/alerts/outbox.js';
import { notifiableEventTypes } from '../src/config.js';
import { openDatabase } from '../src/db/connection.js';
import { planCycle } from '../src/scanner/state-machine.js';
import { sqliteStore } from '../src/store/sqlite/store.js';
import { ScanStore } from '../test/helpers/scan-store.js';
import { startMosquitto } from '../test/helpers/mosquitto.js';
import {
  deviceCount,
  measuredObservations,
  seedAlertsWorld,
  departures,
  newDevices,
} from './alerts-world.js';
import { benchToken, freePort, median, runLoad, type LoadResult } from './lib.js';
import { mac } from './scan.js';

const cycleRounds = 9;
const serverRounds = Number(process.env.BENCH_ALERTS_ROUNDS ?? 5);
const notifiedEvents = newDevices + departures;

const ms = (v: number): string => `${v.toFixed(1)} ms`;
const spread = (values: number[]): string =>
  `median ${ms(median(values))} (min ${ms(Math.min(...values))}, max ${ms(Math.max(...values))}, n=${values.length})`;

function removeDb(file: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
}

/** Part 1: one cycle's processing, without and with the four channels' outbox rows. */
export async function benchCycleTime(seeded: string, dir: string): Promise<void> {
  const times: Record<'none' | 'channels', number[]> = { none: [], channels: [] };
  const recordMs: number[] = [];
  let recorded = '';
  for (let round = 0; round < cycleRounds; round++) {
    const order = round % 2 === 0 ? (['none', 'channels'] as const) : (['channels', 'none'] as const);
    for (const mode of order) {
      const file = join(dir, `cycle-${mode}.db`);
      copyFileSync(seeded, file);
      const db = openDatabase(file);
      const sqlite = sqliteStore(db);
      const store = new ScanStore(sqlite.core, sqlite);
      const outbox =
        mode === 'channels'
          ? new Outbox(sqlite.outbox, {
              channels: channelNames,
              enabledTypes: new Set(notifiableEventTypes),
            })
          : undefined;
      const observations = measuredObservations();
      const started = performance.now();
      const now = new Date();
      const plan = planCycle({ known: store.loadState(), observations, missesBeforeAbsent: 1, now });
      const recordStart = performance.now();
      // The outbox's planning runs inside the cycle's transaction; its time is measured there.
      const notify = outbox?.request(plan.events, now);
      store.apply(
        plan,
        notify && {
          notify: {
            ...notify,
            plan: (devices) => {
              const batches = notify.plan(devices);
              recordMs.push(performance.now() - recordStart);
              return batches;
            },
          },
        },
      );
      times[mode].push(performance.now() - started);
      if (outbox) recorded = JSON.stringify(await outbox.countsByChannelAndStatus());
      db.close();
      removeDb(file);
    }
  }
  const slower = median(times.channels) / median(times.none) - 1;
  console.log(`alerts cycle: outbox rows ${recorded}`);
  console.log(`alerts cycle without channels: ${spread(times.none)}`);
  console.log(`alerts cycle with 4 channels:  ${spread(times.channels)}`);
  console.log(
    `alerts cycle: the outbox's share (rules, snapshots, rows; inside the transaction): ${spread(recordMs)}`,
  );
  console.log(
    `alerts cycle: ${(slower * 100).toFixed(1)}% slower with channels (medians); target <= 10%: ${slower <= 0.1 ? 'met' : 'MISSED'}`,
  );
}

interface Child {
  readonly process: ChildProcess;
  /** Resolves with the next stdout line (parsed) that satisfies `match`. */
  next<T>(match: (line: Record<string, unknown>) => boolean): Promise<T>;
  readonly lines: Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

function startScript(script: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, [fileURLToPath(new URL(script, import.meta.url))], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: Array<Record<string, unknown>> = [];
  const waiters: Array<{
    match: (line: Record<string, unknown>) => boolean;
    resolve: (line: unknown) => void;
  }> = [];
  createInterface({ input: child.stdout }).on('line', (text) => {
    const line = JSON.parse(text) as Record<string, unknown>;
    lines.push(line);
    for (const waiter of [...waiters])
      if (waiter.match(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
  return {
    process: child,
    lines,
    next: <T>(match: (line: Record<string, unknown>) => boolean) =>
      new Promise<T>((resolve, reject) => {
        waiters.push({ match, resolve: resolve as (line: unknown) => void });
        void exited.then(() => {
          reject(new Error(`${script} exited`));
        });
      }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Part 2: in a server child, the cycle, then device GETs for 2 s from its COMMIT on, with the four
 * channels (deliveries in flight) and, interleaved, without channels (the same cycle's cost to GETs:
 * its writes empty the GET cache), plus the time from COMMIT until every delivery arrived.
 */
export async function benchDeliveries(seeded: string, dir: string): Promise<void> {
  const broker = await startMosquitto();
  const receivers = startScript('./alerts-receivers.js', { BENCH_MQTT_URL: broker.url });
  const { port: receiverPort } = await receivers.next<{ port: number }>((l) => l.ready === true);
  const channelEnv = {
    NOTIFY_WEBHOOK_URL: `http://127.0.0.1:${receiverPort}/hook`,
    NOTIFY_WEBHOOK_SECRET: 'bench-secret',
    NOTIFY_NTFY_URL: `http://127.0.0.1:${receiverPort}/ntfy/netkeep`,
    NOTIFY_APPRISE_URL: `http://127.0.0.1:${receiverPort}/apprise/notify/netkeep`,
    MQTT_URL: broker.url,
  };
  const delivered: number[] = [];
  const before: LoadResult[] = [];
  const after: Record<'none' | 'channels', LoadResult[]> = { none: [], channels: [] };
  const cycleMs: Record<'none' | 'channels', number[]> = { none: [], channels: [] };
  try {
    for (let round = 0; round < serverRounds; round++) {
      const order = round % 2 === 0 ? (['channels', 'none'] as const) : (['none', 'channels'] as const);
      for (const mode of order) {
        const file = join(dir, 'server.db');
        copyFileSync(seeded, file);
        const port = await freePort();
        const server = startScript('./alerts-server.js', {
          BENCH_DB: file,
          HOST: '127.0.0.1',
          PORT: String(port),
          ...(mode === 'channels' ? channelEnv : {}),
        });
        try {
          await server.next((l) => l.ready === true);
          const headers = { authorization: `Bearer ${benchToken}` };
          const url = `http://127.0.0.1:${port}`;
          const load = (duration: number): Promise<LoadResult> =>
            runLoad({
              url,
              connections: 32,
              duration,
              headers,
              next: () => ({ path: `/device/${mac(Math.floor(Math.random() * deviceCount))}` }),
            });
          // Warm-up: JIT, page cache, and the GET cache (every device asked for once).
          let warmed = 0;
          await runLoad({
            url,
            amount: deviceCount,
            headers,
            next: () => ({ path: `/device/${mac(warmed++ % deviceCount)}` }),
          });
          before.push(await load(2));
          const httpBase = receivers.lines.filter((x) => typeof x.path === 'string').length;
          const mqttBase = receivers.lines.filter((x) => typeof x.mqttEvents === 'number').length;
          server.process.stdin?.write('cycle\n');
          const cycle = await server.next<{ cycleMs: number; committedAt: number }>((l) => 'cycleMs' in l);
          cycleMs[mode].push(cycle.cycleMs);
          after[mode].push(await load(2));
          if (mode === 'none') continue;
          // Lines that arrived while the load ran are already in `receivers.lines`.
          for (let wait = 0; wait < 1200; wait++) {
            const http = receivers.lines.filter((x) => typeof x.path === 'string').length - httpBase;
            const mqtt = receivers.lines.filter((x) => typeof x.mqttEvents === 'number').length - mqttBase;
            if (http >= 3 && mqtt >= notifiedEvents / 100) break;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          const last = Math.max(
            ...receivers.lines.slice(-(notifiedEvents / 100 + 3)).map((l) => Number(l.at ?? 0)),
          );
          delivered.push(last - cycle.committedAt);
        } finally {
          await server.stop();
          removeDb(file);
        }
      }
    }
  } finally {
    await receivers.stop();
    await broker.stop();
  }
  const p99s = (results: LoadResult[]): number[] => results.map((r) => r.p99);
  const rps = (results: LoadResult[]): string =>
    `req/s median ${Math.round(median(results.map((r) => r.requestsPerSecond)))}`;
  console.log(`alerts server: cycle in the server child, no channels: ${spread(cycleMs.none)}`);
  console.log(`alerts server: cycle in the server child, 4 channels:  ${spread(cycleMs.channels)}`);
  console.log(
    `alerts server: COMMIT -> every delivery arrived (3 HTTP deliveries of ${notifiedEvents} events + ${notifiedEvents} MQTT events): ${spread(delivered)}`,
  );
  console.log(
    `alerts server: GET /device p99, warm cache, no cycle:          ${spread(p99s(before))}; ${rps(before)}`,
  );
  console.log(
    `alerts server: GET /device p99, 2 s after the cycle, no channels: ${spread(p99s(after.none))}; ${rps(after.none)}`,
  );
  console.log(
    `alerts server: GET /device p99, 2 s after the cycle, 4 channels:  ${spread(p99s(after.channels))}; ${rps(after.channels)}`,
  );
  const errors = [...before, ...after.none, ...after.channels].reduce((a, r) => a + r.errors + r.non2xx, 0);
  console.log(
    `alerts server: errors ${errors}; target p99 < 10 ms with deliveries in flight: ${median(p99s(after.channels)) < 10 ? 'met' : 'MISSED'}`,
  );
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-bench-alerts-'));
  try {
    const seeded = join(dir, 'seed.db');
    const started = performance.now();
    seedAlertsWorld(seeded);
    console.log(`alerts: seeded ${deviceCount} devices in ${Math.round(performance.now() - started)} ms`);
    await benchCycleTime(seeded, dir);
    await benchDeliveries(seeded, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
