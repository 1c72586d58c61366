/**
 * Child process of the scan benchmark: applies presence scan cycles back-to-back (load state,
 * plan, apply in one transaction, exactly as the scanner does) against an existing database for
 * BENCH_CYCLE_MS milliseconds (BENCH_CYCLE_PAUSE_MS apart, default back-to-back), alternating two observation sets so that every cycle connects and
 * disconnects thousands of devices. Prints `{"ready":true}` when it starts and one JSON summary
 * line when it is done. It runs in its own process so that the load generator's event loop (in the
 * bench process) is not stalled by the synchronous cycles.
 */
import { openDatabase } from '../src/db/connection.js';
import { planCycle } from '../src/scanner/state-machine.js';
import { SqliteDevices } from '../src/store/sqlite/devices.js';
import { ScanStore } from '../test/helpers/scan-store.js';
import { observations, shiftedObservations } from './scan.js';

const file = process.env.BENCH_DB ?? '';
const forMs = Number(process.env.BENCH_CYCLE_MS ?? '5000');
/** Pause between cycles (0: back-to-back). */
const pauseMs = Number(process.env.BENCH_CYCLE_PAUSE_MS ?? '0');
if (file === '' || !(forMs > 0)) throw new Error('BENCH_DB and BENCH_CYCLE_MS are required');

const db = openDatabase(file);
const store = new ScanStore(new SqliteDevices(db));
const sets = [observations(), shiftedObservations()];
const durations: number[] = [];
let events = 0;
console.log(JSON.stringify({ ready: true }));
const deadline = performance.now() + forMs;
while (performance.now() < deadline) {
  const started = performance.now();
  const plan = planCycle({
    known: store.loadState(),
    observations: sets[durations.length % sets.length] ?? new Map(),
    missesBeforeAbsent: 1,
    now: new Date(),
  });
  store.apply(plan);
  durations.push(performance.now() - started);
  events += plan.events.length;
  // Let stdout and signals through between cycles.
  if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  else await new Promise((resolve) => setImmediate(resolve));
}
db.close();
const sorted = [...durations].sort((a, b) => a - b);
console.log(
  JSON.stringify({
    cycles: durations.length,
    events,
    medianMs: sorted[Math.floor(sorted.length / 2)] ?? 0,
    maxMs: sorted.at(-1) ?? 0,
    busyMs: durations.reduce((a, b) => a + b, 0),
  }),
);
