/**
 * Benchmark of presence scanning, in two parts:
 *
 * 1. One cycle's processing (load state + plan + apply in one transaction) for 5,000 present
 *    devices against a database of 10,000 devices and 1,000,000 events. Scan results are fed in
 *    directly, not scanned. Target: under 200 ms. Each measured cycle runs on a fresh copy of the
 *    seeded database, so every cycle sees the same mix:
 *    4,700 already present (47 of them at a new IP), 250 reconnecting, 50 new, 1,300 disconnecting.
 *    Then the same with the presence rules at work: of the 5,000 scanned devices 1,000 (20 %) are
 *    sleepers (devCanSleep, last seen 10 minutes ago) that this cycle misses, so they stay present
 *    as sleeping, and 50 (1 %) have six changes within the last hour, so they start to flap (a
 *    Flapping event each); the flap window's events are counted for every device, as the scanner
 *    does.
 * 2. Device GETs served while cycles run: the real server (child process) on a copy of the same
 *    database, autocannon GET /device/<random mac> at 32 connections, first alone, then while
 *    another child process (scan-cycler.ts) applies cycles back-to-back to the same file.
 * 3. Random MACs (docs/random-macs.md): the same cycle as the scanner runs it (aliases, linking,
 *    plan, apply), without rotations and with 500 of the 5,000 seen devices under a new random MAC
 *    that the DHCP leases link by client identifier (target: under 200 ms beyond the first); then
 *    GET /device/<alias> against GET /device/<own MAC> of the same 500 devices on the real server.
 * 4. The part 1 cycle on PostgreSQL (scan-postgres.ts), from the same seeded store copied into it.
 */
import { spawn } from 'node:child_process';
import { closeSync, copyFileSync, fsyncSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../src/db/connection.js';
import type { Observation } from '../src/scanner/discovery.js';
import { MacStep, type DhcpIdentity } from '../src/scanner/macs.js';
import { withLinks } from '../src/scanner/scanner.js';
import { planCycle } from '../src/scanner/state-machine.js';
import { SqliteDeviceStore } from '../src/store/sqlite/device-store.js';
import { SqliteDevices } from '../src/store/sqlite/devices.js';
import { ScanStore } from '../test/helpers/scan-store.js';
import { dbTime } from '../src/time.js';
import { startNetkeep } from './devices.js';
import { benchToken, median, printHeader, printRow, runLoad, type LoadResult } from './lib.js';
import { benchScanPostgres } from './scan-postgres.js';
import { seedDatabaseFile } from './seed.js';

const deviceCount = 10_000;
const eventCount = 1_000_000;
const presentBefore = 6_000;
const cycles = 7;

export function mac(i: number): string {
  const hex = i.toString(16).padStart(8, '0');
  return `02:00:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}:${hex.slice(6, 8)}`;
}
export function ip(i: number): string {
  return `10.${(i >> 16) & 0xff}.${(i >> 8) & 0xff}.${i & 0xff}`;
}

function seed(file: string): void {
  const start = Date.parse('2024-06-01T00:00:00Z');
  seedDatabaseFile(file, (seeder) => {
    for (let i = 0; i < deviceCount; i++) {
      seeder.device(mac(i), {
        devLastIP: ip(i),
        devFirstConnection: '2024-06-01 00:00:00',
        devLastConnection: '2025-01-01 00:00:00',
        devPresentLastScan: i < presentBefore ? 1 : 0,
        devIsNew: 0,
      });
      if (i < presentBefore) seeder.session(mac(i), ip(i), '2025-01-01 00:00:00', null);
    }
    const types = ['Connected', 'Disconnected', 'IP Changed', 'Device Down'];
    for (let e = 0; e < eventCount; e++) {
      const device = e % deviceCount;
      seeder.event(mac(device), ip(device), dbTime(new Date(start + e * 15_000)), types[e % 4] ?? '');
      // A closed session for every other Connected/Disconnected pair: history of realistic size.
      if (e % 8 === 1)
        seeder.session(
          mac(device),
          ip(device),
          dbTime(new Date(start + (e - 1) * 15_000)),
          dbTime(new Date(start + e * 15_000)),
        );
    }
  });
}

function observe(seen: Map<string, Observation>, i: number, address: string): void {
  seen.set(mac(i), { ips: [address], vendor: 'Bench Vendor', source: 'arp-scan' });
}

/** The measured cycle's observations (see the header for the mix). */
export function observations(): Map<string, Observation> {
  const seen = new Map<string, Observation>();
  const add = (i: number, address: string): void => {
    observe(seen, i, address);
  };
  for (let i = 0; i < 4_700; i++) add(i, i % 100 === 0 ? ip(i + 50_000) : ip(i)); // present
  for (let i = presentBefore; i < presentBefore + 250; i++) add(i, ip(i)); // reconnecting
  for (let i = deviceCount; i < deviceCount + 50; i++) add(i, ip(i)); // new
  return seen; // 4,700..5,999 were present and are not seen: disconnecting
}

/**
 * 5,000 devices shifted by 1,300 from `observations()`: alternating the two makes every cycle
 * connect and disconnect thousands of devices (for the back-to-back cycles of part 2).
 */
export function shiftedObservations(): Map<string, Observation> {
  const seen = new Map<string, Observation>();
  for (let i = 1_300; i < 6_300; i++) observe(seen, i, ip(i));
  return seen;
}

const rotating = 500;
/** The new random MAC of device i when it rotates (0x0a: locally administered, unlike 0x02's block). */
export function rotatedMac(i: number): string {
  return `0a${mac(i).slice(2)}`;
}

/**
 * The measured observations with the first 500 seen devices under their rotated MAC, and the
 * leases that tie each to its old MAC by client identifier (as remembered from earlier readings).
 */
function rotatedObservations(): { seen: Map<string, Observation>; leases: Map<string, DhcpIdentity> } {
  const seen = new Map<string, Observation>();
  const leases = new Map<string, DhcpIdentity>();
  for (const [m, observation] of observations()) seen.set(m, observation);
  for (let i = 0; i < rotating; i++) {
    const observation = seen.get(mac(i));
    if (observation === undefined) continue;
    seen.delete(mac(i));
    seen.set(rotatedMac(i), observation);
    const clientId = `ff:${mac(i)}`;
    leases.set(mac(i), { clientId, hostname: '' });
    leases.set(rotatedMac(i), { clientId, hostname: '' });
  }
  return { seen, leases };
}

/**
 * A copy of the seeded database for one measured cycle, on disk before the cycle starts. Why: the
 * cycle's commit flushes the WAL, and on ext4 that flush also writes out whatever the file system
 * still holds of the copy just made; a scanner's database is never that fresh. Unflushed,
 * the copy made the cycle take 15-22 % longer (docs/benchmarks.md, "scan").
 */
function freshCopy(seeded: string, file: string): void {
  copyFileSync(seeded, file);
  const fd = openSync(file, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** One cycle as the scanner applies it (aliases and links, plan, apply) on a copy of `seeded`. */
async function macCycle(
  seeded: string,
  file: string,
  seen: ReadonlyMap<string, Observation>,
  leases: ReadonlyMap<string, DhcpIdentity> | undefined,
): Promise<{ ms: number; macMs: number; links: number }> {
  freshCopy(seeded, file);
  const db = openDatabase(file);
  const repository = new SqliteDevices(db);
  const store = new ScanStore(repository);
  const step = new MacStep(new SqliteDeviceStore(repository), true);
  const t0 = performance.now();
  const known = store.loadState();
  const now = new Date();
  const t1 = performance.now();
  const macs = await step.run(seen, new Set(known.keys()), leases, now);
  const macMs = performance.now() - t1;
  const planned = planCycle({ known, observations: macs.observations, missesBeforeAbsent: 1, now });
  store.apply(withLinks(planned, macs, known, now));
  const ms = performance.now() - t0;
  db.close();
  return { ms, macMs, links: macs.links.length };
}

/** Part 3: a cycle with and without 500 rotations; GET by alias against GET by own MAC. */
export async function benchRandomMacs(seeded: string, dir: string): Promise<void> {
  const plain = observations();
  const rotated = rotatedObservations();
  const without: number[] = [];
  const withRotations: number[] = [];
  const steps: number[] = [];
  let links = 0;
  for (let c = 0; c < cycles; c++) {
    const file = join(dir, `macs-${c}.db`);
    without.push((await macCycle(seeded, file, plain, undefined)).ms);
    const r = await macCycle(seeded, file, rotated.seen, rotated.leases);
    withRotations.push(r.ms);
    steps.push(r.macMs);
    links = r.links;
  }
  const beyond = median(withRotations) - median(without);
  const ms = (v: number): string => `${v.toFixed(1)} ms`;
  console.log(
    `random MACs: cycle without rotations median ${ms(median(without))}; with ${links} of 5,000 rotated and linked ` +
      `median ${ms(median(withRotations))} (min ${ms(Math.min(...withRotations))}, max ${ms(Math.max(...withRotations))}; ` +
      `the alias and linking step ${ms(median(steps))}); ` +
      `${ms(beyond)} beyond; target < 200 ms beyond: ${beyond < 200 ? 'met' : 'MISSED'}`,
  );
  // The last copy holds the 500 links: GETs by alias and by own MAC on the real server.
  const dataDir = join(dir, 'macs-data');
  mkdirSync(dataDir);
  copyFileSync(join(dir, `macs-${cycles - 1}.db`), join(dataDir, 'netkeep.db'));
  const server = await startNetkeep(dataDir, { HISTORY_DAYS: '3650' });
  const auth = { authorization: `Bearer ${benchToken}` };
  const pick = (): number => Math.floor(Math.random() * rotating);
  const load = (path: (i: number) => string): Promise<LoadResult> =>
    runLoad({ url: server.url, duration: 3, headers: auth, next: () => ({ path: path(pick()) }) });
  try {
    await load((i) => `/device/${mac(i)}`); // warm-up
    console.log('');
    printHeader();
    // Alternated rounds: on a shared machine, load from elsewhere then hits both kinds alike.
    for (let round = 1; round <= 3; round++) {
      printRow(`GET /device/<own MAC>, round ${round}`, await load((i) => `/device/${mac(i)}`));
      printRow(`GET /device/<alias>, round ${round}`, await load((i) => `/device/${rotatedMac(i)}`));
    }
  } finally {
    await server.stop();
  }
}

/** Seeds `$dir/seed.db` once for both parts. */
export function seedOnce(dir: string): string {
  const seeded = join(dir, 'seed.db');
  const seedStart = performance.now();
  seed(seeded);
  console.log(
    `scan: seeded ${deviceCount} devices, ${eventCount} events in ${Math.round(performance.now() - seedStart)} ms`,
  );
  return seeded;
}

/** How one measured variant of a cycle differs from the plain one. */
interface Variant {
  readonly label: string;
  readonly observed: Map<string, Observation>;
  /** Changes to the fresh copy before the cycle (outside the measured time). */
  readonly prepare?: (db: ReturnType<typeof openDatabase>, now: Date) => void;
  /** The flap window's start is given to loadState, as the scanner gives it. */
  readonly flapWindowMinutes?: number;
}

const presenceNow = new Date('2025-01-01T01:00:00Z');
const sleepers = 1_000;
const flappers = 50;

/** The plain mix without the 1,000 sleepers (devices 0..999 are missed this cycle). */
function presenceObservations(): Map<string, Observation> {
  const seen = observations();
  for (let i = 0; i < sleepers; i++) seen.delete(mac(i));
  return seen;
}

/** Devices 0..999 may sleep and were seen 10 minutes ago; 1,000..1,049 changed six times this hour. */
function preparePresence(db: ReturnType<typeof openDatabase>, now: Date): void {
  const lastSeen = dbTime(new Date(now.getTime() - 10 * 60_000));
  db.transaction(() => {
    const sleeper = db.prepare('UPDATE Devices SET devCanSleep = 1, devLastConnection = ? WHERE devMac = ?');
    for (let i = 0; i < sleepers; i++) sleeper.run(lastSeen, mac(i));
    const event =
      db.prepare(`INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo,
        eve_PendingAlertEmail, eve_PairEventRowid) VALUES (?, ?, ?, ?, '', 0, NULL)`);
    for (let i = sleepers; i < sleepers + flappers; i++)
      for (let k = 0; k < 6; k++)
        event.run(
          mac(i),
          ip(i),
          dbTime(new Date(now.getTime() - (55 - k * 8) * 60_000)),
          k % 2 ? 'Connected' : 'Disconnected',
        );
  })();
}

async function measure(seeded: string, dir: string, variant: Variant): Promise<void> {
  const totals: number[] = [];
  const loads: number[] = [];
  const plans: number[] = [];
  const applies: number[] = [];
  let counts = '';
  for (let c = 0; c < cycles; c++) {
    const file = join(dir, `cycle-${c}.db`);
    freshCopy(seeded, file);
    const db = openDatabase(file);
    const now = variant.prepare ? presenceNow : new Date();
    variant.prepare?.(db, now);
    const store = new ScanStore(new SqliteDevices(db));
    const since =
      variant.flapWindowMinutes === undefined
        ? null
        : new Date(now.getTime() - variant.flapWindowMinutes * 60_000);
    const t0 = performance.now();
    const known = store.loadState(since);
    const t1 = performance.now();
    const plan = planCycle({ known, observations: variant.observed, missesBeforeAbsent: 1, now });
    const t2 = performance.now();
    store.apply(plan);
    const t3 = performance.now();
    loads.push(t1 - t0);
    plans.push(t2 - t1);
    applies.push(t3 - t2);
    totals.push(t3 - t0);
    counts = JSON.stringify(plan.counts);
    db.close();
    rmSync(file, { force: true });
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
  }
  const ms = (v: number): string => `${v.toFixed(1)} ms`;
  console.log(`${variant.label}: mix ${counts}`);
  console.log(
    `${variant.label}: median ${ms(median(totals))} (load ${ms(median(loads))}, plan ${ms(median(plans))}, ` +
      `apply+commit ${ms(median(applies))}); min ${ms(Math.min(...totals))}, max ${ms(Math.max(...totals))} ` +
      `over ${cycles} cycles; target < 200 ms: ${median(totals) < 200 ? 'met' : 'MISSED'}`,
  );
}

/** Part 1: the processing time of one cycle, plain and with the presence rules at work. */
export async function benchScan(seeded?: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-bench-scan-'));
  try {
    seeded ??= seedOnce(dir);
    await measure(seeded, dir, { label: 'scan cycle', observed: observations(), flapWindowMinutes: 60 });
    await measure(seeded, dir, {
      label: 'scan cycle, 20% sleeping, 1% flapping',
      observed: presenceObservations(),
      prepare: preparePresence,
      flapWindowMinutes: 60,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const cyclerScript = fileURLToPath(new URL('./scan-cycler.js', import.meta.url));

export interface CyclerSummary {
  cycles: number;
  events: number;
  medianMs: number;
  maxMs: number;
  busyMs: number;
}

/**
 * Starts scan-cycler.ts on `file` for `forMs` and resolves once it has started its first cycle;
 * `done` resolves with its summary.
 */
export async function startCycler(
  file: string,
  forMs: number,
  pauseMs = 0,
): Promise<{ done: Promise<CyclerSummary> }> {
  const child = spawn(process.execPath, [cyclerScript], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      BENCH_DB: file,
      BENCH_CYCLE_MS: String(forMs),
      BENCH_CYCLE_PAUSE_MS: String(pauseMs),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  let ready: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const done = new Promise<CyclerSummary>((resolve, reject) => {
    let summary: CyclerSummary | undefined;
    lines.on('line', (line) => {
      const parsed = JSON.parse(line) as { ready?: boolean } & Partial<CyclerSummary>;
      if (parsed.ready === true) ready();
      else summary = parsed as CyclerSummary;
    });
    child.once('exit', (code) => {
      ready();
      if (summary !== undefined) resolve(summary);
      else reject(new Error(`scan-cycler exited with ${code} and no summary`));
    });
  });
  await started;
  return { done };
}

/** Part 2: GET /device/<mac> alone, then while cycles are applied back-to-back to the same file. */
export async function benchGetsDuringCycles(seeded: string, dir: string): Promise<void> {
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  copyFileSync(seeded, join(dataDir, 'netkeep.db'));
  // The seeded history is from 2024: a server with the default HISTORY_DAYS would prune it at start.
  const server = await startNetkeep(dataDir, { HISTORY_DAYS: '3650' });
  const auth = { authorization: `Bearer ${benchToken}` };
  const randomMac = (): string => mac(Math.floor(Math.random() * deviceCount));
  const load = (duration: number): Promise<LoadResult> =>
    runLoad({ url: server.url, duration, headers: auth, next: () => ({ path: `/device/${randomMac()}` }) });
  try {
    await load(2); // warm-up: JIT, SQLite page cache
    console.log('');
    printHeader();
    const alone = await load(5);
    printRow('GET /device/<mac>, no cycles', alone);
    const cycler = await startCycler(join(dataDir, 'netkeep.db'), 6_000);
    const during = await load(5);
    const summary = await cycler.done;
    printRow('GET /device/<mac>, cycles back-to-back', during);
    console.log('');
    console.log(
      `scan + GETs: ${summary.cycles} cycles applied in ~6 s by another process (median ${summary.medianMs.toFixed(0)} ms, ` +
        `max ${summary.maxMs.toFixed(0)} ms, ${summary.events} events written, writer busy ${(summary.busyMs / 1000).toFixed(1)} s); ` +
        `GET req/s ${Math.round(during.requestsPerSecond)} vs ${Math.round(alone.requestsPerSecond)} alone ` +
        `(${((100 * during.requestsPerSecond) / alone.requestsPerSecond).toFixed(0)}%), ` +
        `p99 ${during.p99} ms vs ${alone.p99} ms`,
    );
  } finally {
    await server.stop();
  }
}

/** `npm run bench -- scan`. */
export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-bench-scan-'));
  try {
    const seeded = seedOnce(dir);
    await benchScan(seeded);
    await benchGetsDuringCycles(seeded, dir);
    await benchRandomMacs(seeded, dir);
    await benchScanPostgres(seeded);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  await run();
}
