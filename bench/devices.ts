/**
 * Device endpoint benchmark: a database of 10,000 devices, 1,000,000 events and 200,000 sessions,
 * the real server in a child process on loopback, autocannon at 32 connections for ~5 s per case:
 * GET /device/<random mac>, the same with ?period=1 year, POST update-column; then a bare node:http
 * server answering the same JSON from memory as the ceiling.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serverNodeFlagsFor } from '../src/node-flags.js';
import { dbTime } from '../src/time.js';
import {
  benchToken,
  memoryOf,
  printHeader,
  printRow,
  runLoad,
  startChild,
  type ChildServer,
  type LoadResult,
} from './lib.js';
import { seedDatabaseFile } from './seed.js';

export interface SeedSize {
  readonly devices: number;
  readonly events: number;
  readonly sessions: number;
}

export const defaultSeed: SeedSize = { devices: 10_000, events: 1_000_000, sessions: 200_000 };

/** MAC of the i-th seeded device. */
export function seededMac(i: number): string {
  const hex = i.toString(16).padStart(6, '0');
  return `02:00:00:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}`;
}

const eventTypes = ['Connected', 'Disconnected', 'Connected', 'Disconnected', 'Device Down', 'IP Changed'];

/**
 * Creates `$dataDir/netkeep.db` with the real migrations and fills it in one transaction with
 * prepared statements. History is spread over the last two years; every tenth device has one of
 * the first hundred as its parent, so the children query has work to do.
 */
export function seedDatabase(dataDir: string, size: SeedSize = defaultSeed): void {
  const now = Date.now();
  const span = 730 * 86_400_000;
  let seed = 42;
  // A small deterministic PRNG, so runs are comparable.
  const random = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  seedDatabaseFile(join(dataDir, 'netkeep.db'), (seeder) => {
    for (let i = 0; i < size.devices; i++) {
      seeder.device(seededMac(i), {
        devName: `device-${i}`,
        devVendor: 'Example Vendor',
        devLastIP: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
        devPresentLastScan: i % 3 === 0 ? 0 : 1,
        devAlertDown: i % 5 === 0 ? 1 : 0,
        devFirstConnection: dbTime(new Date(now - span)),
        devLastConnection: dbTime(new Date(now - 60_000)),
        devParentMAC: i >= 100 && i % 10 === 0 ? seededMac(i % 100) : '',
        devParentRelType: i % 20 === 0 ? 'nic' : 'default',
      });
    }
    for (let i = 0; i < size.events; i++) {
      const device = Math.floor(random() * size.devices);
      const at = now - Math.floor(random() * span);
      seeder.event(
        seededMac(device),
        '10.0.0.1',
        dbTime(new Date(at)),
        eventTypes[i % eventTypes.length] ?? '',
      );
    }
    for (let i = 0; i < size.sessions; i++) {
      const device = Math.floor(random() * size.devices);
      const from = now - Math.floor(random() * span);
      const open = i % 50 === 0;
      const to = Math.min(now, from + Math.floor(random() * 12 * 3_600_000));
      seeder.session(
        seededMac(device),
        '10.0.0.1',
        dbTime(new Date(from)),
        open ? null : dbTime(new Date(to)),
      );
    }
  });
}

const mainScript = fileURLToPath(new URL('../src/main.js', import.meta.url));
const ceilingScript = fileURLToPath(new URL('./ceiling-server.js', import.meta.url));

/**
 * The real netkeep server (child process, loopback) on an existing data directory. HISTORY_DAYS is
 * 3650 unless given: the seeded history spans two years, and the default (365) would make the
 * server prune half of it at start, while the load runs.
 */
export async function startNetkeep(dataDir: string, env: Record<string, string> = {}): Promise<ChildServer> {
  return startChild(
    mainScript,
    { DATA_DIR: dataDir, API_TOKEN: benchToken, LOG_LEVEL: 'info', HISTORY_DAYS: '3650', ...env },
    '/health',
    serverNodeFlagsFor('', totalmem()), // as `npm start` runs it
  );
}

/** A temporary data directory seeded with `size`, plus the server started on it. */
export async function startSeededServer(
  size: SeedSize = defaultSeed,
): Promise<{ server: ChildServer; dataDir: string; seedMs: number; cleanup: () => Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-'));
  const started = performance.now();
  seedDatabase(dataDir, size);
  const seedMs = performance.now() - started;
  const server = await startNetkeep(dataDir);
  return {
    server,
    dataDir,
    seedMs,
    cleanup: async () => {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function run(): Promise<void> {
  const size = defaultSeed;
  const { server, dataDir, seedMs, cleanup } = await startSeededServer(size);
  console.log(
    `\n## devices: ${size.devices} devices, ${size.events} events, ${size.sessions} sessions (seeded in ${(seedMs / 1000).toFixed(1)} s)\n`,
  );
  const auth = { authorization: `Bearer ${benchToken}` };
  const randomMac = (): string => seededMac(Math.floor(Math.random() * size.devices));
  const results: Record<string, LoadResult> = {};
  const idle = server.process.pid === undefined ? undefined : memoryOf(server.process.pid);
  try {
    // Warm-up: JIT, SQLite page cache, and the GET cache (src/devices/view-cache.ts): every device
    // is asked for once, in turn, so the measured run sees the steady state of a server that has
    // answered for each device since the last write (random MACs alone would need ~100k requests
    // to reach every device). `?period=1 year` is never cached.
    let warmed = 0;
    await runLoad({
      url: server.url,
      amount: size.devices,
      headers: auth,
      next: () => ({ path: `/device/${seededMac(warmed++ % size.devices)}` }),
    });
    printHeader();
    results.get = await runLoad({
      url: server.url,
      headers: auth,
      next: () => ({ path: `/device/${randomMac()}` }),
    });
    printRow('netkeep GET /device/<mac>', results.get);
    results.year = await runLoad({
      url: server.url,
      headers: auth,
      next: () => ({ path: `/device/${randomMac()}?period=1%20year` }),
    });
    printRow('netkeep GET /device/<mac>?period=1 year', results.year);
    let counter = 0;
    results.update = await runLoad({
      url: server.url,
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      next: () => ({
        path: `/device/${randomMac()}/update-column`,
        body: JSON.stringify({ columnName: 'devComments', columnValue: `bench ${++counter}` }),
      }),
    });
    printRow('netkeep POST update-column', results.update);
    const pid = server.process.pid;
    const memory = pid === undefined ? undefined : memoryOf(pid);
    await server.stop();

    const ceiling = await startChild(ceilingScript, { DATA_DIR: dataDir });
    try {
      await runLoad({ url: ceiling.url, duration: 2, next: () => ({ path: `/device/${randomMac()}` }) });
      results.ceiling = await runLoad({ url: ceiling.url, next: () => ({ path: `/device/${randomMac()}` }) });
      printRow('ceiling: bare node:http, JSON from memory', results.ceiling);
    } finally {
      await ceiling.stop();
    }

    console.log('');
    const ratio = (name: string): string =>
      `${((100 * (results[name]?.requestsPerSecond ?? 0)) / (results.ceiling?.requestsPerSecond ?? 1)).toFixed(0)}%`;
    console.log(`netkeep/ceiling: GET ${ratio('get')}, GET 1 year ${ratio('year')} (target >= 50%)`);
    console.log(
      `p99 at 32 connections: GET ${results.get.p99} ms, GET 1 year ${results.year.p99} ms, update-column ${results.update.p99} ms (target < 10 ms)`,
    );
    if (memory && idle) {
      const peakMB = (memory.peakMiB * 1024 * 1024) / 1e6; // the target is in MB, /proc counts KiB
      console.log(
        `netkeep RSS: ${idle.rssMiB.toFixed(0)} MiB idle after start, ${memory.rssMiB.toFixed(0)} MiB after the runs, ` +
          `peak ${memory.peakMiB.toFixed(0)} MiB = ${peakMB.toFixed(0)} MB (target < 150 MB: ${peakMB < 150 ? 'met' : 'missed'})`,
      );
    }
  } finally {
    await cleanup();
  }
}
