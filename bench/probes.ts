/**
 * Benchmark of a hub (DESIGN 16, issue 26's figures), on SQLite and on PostgreSQL in the same run.
 *
 * The main case: 20 simulated probes x 1,000 devices each, one cycle per probe every 10 s
 * (staggered over the 10 s), POST /probes/cycles against the real server (a child process on a
 * fresh SQLite file; then on a fresh database of a private PostgreSQL with its durability on,
 * test/helpers/postgres.ts). Each cycle sees its probe's devices with 5 % of them absent, a
 * different 5 % each round, so every cycle writes Connected and Disconnected events. Reported:
 * - the apply lag: from sending a cycle to its 200 (the hub applies a cycle before it answers: the
 *   apply, plus any wait behind another probe's cycle), for the first round (20,000 New Devices)
 *   and for the later rounds (p50, p99; target p99 < 1 s);
 * - device GET (autocannon, GET /device/<random mac>, 32 connections) alone and during each later
 *   round (one load run per round; the medians of the rounds' req/s and p99; target p99 < 10 ms),
 *   and its throughput as a share of the bare node:http ceiling (bench/ceiling-server.ts, the same
 *   devices' JSON from memory; target >= 40 %).
 *
 * The scale run (hub on PostgreSQL): 10 then 100 probes x 1,000 devices, one cycle per probe per
 * minute: the apply lag, the hub's RSS (peak, target < 1 GB), GET p99 during the rounds (target
 * < 20 ms), and how each grows from 10 to 100 probes.
 *
 * The machine's load averages are printed before each part: the figures are of a shared machine.
 * Prints figures; asserts nothing.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { postgresMissing, startPostgres, type PostgresServer } from '../test/helpers/postgres.js';
import { startNetkeep } from './devices.js';
import {
  benchToken,
  median,
  memoryOf,
  percentile,
  printHeader,
  printRow,
  runLoad,
  startChild,
  type ChildServer,
  type LoadResult,
} from './lib.js';

const devicesPerProbe = 1_000;
const ceilingScript = fileURLToPath(new URL('./ceiling-server.js', import.meta.url));
const auth = { authorization: `Bearer ${benchToken}` };

const hex = (n: number): string => n.toString(16).padStart(2, '0');
const macOf = (probe: number, device: number): string =>
  `02:00:00:${hex(probe)}:${hex(device >> 8)}:${hex(device & 255)}`;
/** Host k + 1 of the probe's /22 (10.p.0.1 upwards): inside its subnet, never the network address. */
const ipOf = (probe: number, device: number): string =>
  `10.${probe}.${(device + 1) >> 8}.${(device + 1) & 255}`;

function cycleBody(probe: number, round: number): string {
  const now = Date.now();
  const sightings = [];
  for (let d = 0; d < devicesPerProbe; d++) {
    // Round r leaves out the 5 % of devices with d % 20 === r % 20 (none in the first round).
    if (round > 0 && d % 20 === round % 20) continue;
    sightings.push({ mac: macOf(probe, d), ip: ipOf(probe, d), vendor: 'Bench Vendor' });
  }
  return JSON.stringify({
    cycleId: randomUUID(),
    startedAt: new Date(now - 2000).toISOString(),
    finishedAt: new Date(now).toISOString(),
    subnets: [`10.${probe}.0.0/22`],
    sightings,
  });
}

const loads = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');

const lag = (values: readonly number[]): string =>
  `p50 ${median(values).toFixed(0)} ms, p99 ${percentile(values, 99).toFixed(0)} ms, max ${Math.max(...values).toFixed(0)} ms`;

interface HubRun {
  readonly probes: number;
  readonly first: number[];
  readonly later: number[];
  readonly alone: LoadResult;
  /** One GET load run per later round. */
  readonly during: LoadResult[];
  /** The hub's peak RSS (VmHWM) in MiB at the end, and its RSS sampled once a second. */
  readonly peakMiB: number;
  readonly rssMiB: number[];
}

/**
 * Registers `probes` probes on the hub at `server`, runs the first round (every device new), a
 * GET load alone, then `laterRounds` rounds with a GET load beside each.
 */
async function runHub(
  server: ChildServer,
  probes: number,
  periodMs: number,
  laterRounds: number,
): Promise<HubRun> {
  const tokens: string[] = [];
  for (let p = 0; p < probes; p++) {
    const res = await fetch(`${server.url}/probes`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `probe-${p}`, site: `site-${p}` }),
    });
    tokens.push(((await res.json()) as { token: string }).token);
  }
  const pid = server.process.pid ?? 0;
  const rss: number[] = [];
  const sampler = setInterval(() => {
    rss.push(memoryOf(pid).rssMiB);
  }, 1000);
  const upload = async (p: number, round: number): Promise<number> => {
    const body = cycleBody(p, round);
    const started = performance.now();
    const res = await fetch(`${server.url}/probes/cycles`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens[p] ?? ''}`, 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${text.slice(0, 300)}`);
    return performance.now() - started;
  };
  /** One round: each probe's cycle at its offset within the period; resolves with the lags. */
  const round = async (r: number): Promise<number[]> =>
    Promise.all(
      Array.from({ length: probes }, async (_, p) => {
        await new Promise((resolve) => setTimeout(resolve, (p * periodMs) / probes));
        return upload(p, r);
      }),
    );
  try {
    const first = await round(0);
    const randomDevice = () =>
      `/device/${macOf(Math.floor(Math.random() * probes), Math.floor(Math.random() * devicesPerProbe))}`;
    const load = (duration: number) =>
      runLoad({ url: server.url, duration, headers: auth, next: () => ({ path: randomDevice() }) });
    const alone = await load(5);
    const during: LoadResult[] = [];
    const later: number[] = [];
    for (let r = 1; r <= laterRounds; r++) {
      // The round's uploads and a GET load over the same period (ending a second early, so that
      // the load runs inside the round).
      const [lags, result] = await Promise.all([round(r), load(periodMs / 1000 - 1)]);
      later.push(...lags);
      during.push(result);
    }
    return { probes, first, later, alone, during, peakMiB: memoryOf(pid).peakMiB, rssMiB: rss };
  } finally {
    clearInterval(sampler);
  }
}

const medianOf = (runs: readonly LoadResult[], pick: (r: LoadResult) => number): number =>
  median(runs.map(pick));

function report(store: string, run: HubRun, periodMs: number, ceilingRps?: number): void {
  const rps = medianOf(run.during, (r) => r.requestsPerSecond);
  const p99 = medianOf(run.during, (r) => r.p99);
  console.log(
    `\n### ${store}: ${run.probes} probes x ${devicesPerProbe} devices, one cycle per probe per ${periodMs / 1000} s\n`,
  );
  console.log(
    `- first round (${run.probes * devicesPerProbe} New Devices), upload to 200: ${lag(run.first)}`,
  );
  console.log(
    `- later rounds (${run.later.length} cycles, 5 % of each probe's devices change), upload to 200: ${lag(run.later)}`,
  );
  console.log(
    `- GET /device during the rounds, median of ${run.during.length} rounds: ${Math.round(rps)} req/s, p99 ${p99.toFixed(1)} ms` +
      (ceilingRps === undefined ? '' : `; ${Math.round((100 * rps) / ceilingRps)} % of the ceiling`),
  );
  const errors = run.during.reduce((n, r) => n + r.errors + r.non2xx, 0);
  if (errors > 0) console.log(`- GET errors or non-2xx during the rounds: ${errors}`);
  console.log(
    `- hub RSS: peak ${run.peakMiB.toFixed(0)} MiB, median of the samples ${median(run.rssMiB).toFixed(0)} MiB`,
  );
  printHeader();
  printRow('GET /device/<mac>, alone', run.alone);
  run.during.forEach((r, i) => {
    printRow(`GET /device/<mac>, during round ${i + 1}`, r);
  });
}

async function ceilingOf(dataDir: string, probes: number): Promise<number> {
  const ceiling = await startChild(ceilingScript, { DATA_DIR: dataDir });
  try {
    const runs: LoadResult[] = [];
    for (let r = 0; r < 3; r++)
      runs.push(
        await runLoad({
          url: ceiling.url,
          duration: 5,
          headers: auth,
          next: () => ({
            path: `/device/${macOf(Math.floor(Math.random() * probes), Math.floor(Math.random() * devicesPerProbe))}`,
          }),
        }),
      );
    const rps = medianOf(runs, (r) => r.requestsPerSecond);
    console.log(
      `\nceiling (bare node:http, the same devices' JSON from memory): ${Math.round(rps)} req/s (median of 3)`,
    );
    return rps;
  } finally {
    await ceiling.stop();
  }
}

export async function run(): Promise<void> {
  const probes = 20;
  const periodMs = 10_000;
  const laterRounds = 3;

  console.log(`load averages at the start: ${loads()}`);
  const sqliteDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-probes-'));
  let ceilingRps: number;
  try {
    const server = await startNetkeep(sqliteDir, { LOG_LEVEL: 'warn' });
    let sqlite: HubRun;
    try {
      sqlite = await runHub(server, probes, periodMs, laterRounds);
    } finally {
      await server.stop();
    }
    // The ceiling serves the devices the SQLite hub made (its file, read-only).
    ceilingRps = await ceilingOf(sqliteDir, probes);
    report('SQLite', sqlite, periodMs, ceilingRps);
  } finally {
    rmSync(sqliteDir, { recursive: true, force: true });
  }

  const missing = postgresMissing();
  if (missing !== undefined) {
    console.log(`\nPostgreSQL: not run: ${missing}`);
    return;
  }
  const pg = await startPostgres({ durable: true });
  try {
    console.log(`\nload averages before the PostgreSQL run: ${loads()}`);
    report(
      'PostgreSQL (durable)',
      await onPostgres(pg, 'probes', (s) => runHub(s, probes, periodMs, laterRounds)),
      periodMs,
      ceilingRps,
    );

    // The scale run: one cycle per probe per minute, 10 then 100 probes.
    const scalePeriodMs = 60_000;
    const scaleRounds = 2;
    const scale: HubRun[] = [];
    for (const count of [10, 100]) {
      console.log(`\nload averages before the scale run with ${count} probes: ${loads()}`);
      const result = await onPostgres(pg, `scale_${count}`, (s) =>
        runHub(s, count, scalePeriodMs, scaleRounds),
      );
      report('PostgreSQL (durable), scale', result, scalePeriodMs);
      scale.push(result);
    }
    console.log('\n### scale: from 10 to 100 probes (hub on PostgreSQL, one cycle per probe per minute)\n');
    console.log('| probes | devices | apply lag p50 ms | apply lag p99 ms | hub peak RSS MiB | GET p99 ms |');
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const s of scale)
      console.log(
        `| ${s.probes} | ${s.probes * devicesPerProbe} | ${median(s.later).toFixed(0)} | ${percentile(s.later, 99).toFixed(0)} | ` +
          `${s.peakMiB.toFixed(0)} | ${medianOf(s.during, (r) => r.p99).toFixed(1)} |`,
      );
    console.log(`\nload averages at the end: ${loads()}`);
  } finally {
    await pg.stop();
  }
}

/** A hub on a new database of `pg` (a data directory of its own for the rest), for `body`. */
async function onPostgres(
  pg: PostgresServer,
  name: string,
  body: (server: ChildServer) => Promise<HubRun>,
): Promise<HubRun> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-probes-pg-'));
  try {
    const url = await pg.createDatabase(name);
    const server = await startNetkeep(dataDir, { LOG_LEVEL: 'warn', DATABASE_URL: url });
    try {
      return await body(server);
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
