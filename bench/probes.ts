/**
 * Benchmark of a hub (DESIGN 16's figures): 20 simulated probes x 1,000 devices each, one cycle
 * per probe every 10 s (staggered over the 10 s), POST /probes/cycles against the real server (a
 * child process on a fresh SQLite file). Each cycle sees its probe's devices with 5 % of them
 * absent, a different 5 % each round, so every cycle writes Connected and Disconnected events.
 *
 * Reported: the time from sending a cycle to its 200 (the apply, plus any wait behind another
 * probe's cycle), for the first round (20,000 New Devices) and for the later rounds; and device GET
 * throughput and p99 (autocannon, GET /device/<random mac>, 32 connections) alone and while the
 * rounds run. Prints figures; asserts nothing.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startNetkeep } from './devices.js';
import { benchToken, median, percentile, printHeader, printRow, runLoad } from './lib.js';

const probes = 20;
const devicesPerProbe = 1_000;
const periodMs = 10_000;
const laterRounds = 3;

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

export async function run(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-probes-'));
  const server = await startNetkeep(dataDir, { LOG_LEVEL: 'warn' });
  try {
    const tokens: string[] = [];
    for (let p = 0; p < probes; p++) {
      const res = await fetch(`${server.url}/probes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${benchToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `probe-${p}`, site: `site-${p}` }),
      });
      tokens.push(((await res.json()) as { token: string }).token);
    }
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
    /** One round: each probe's cycle at its offset within the period; resolves with the times. */
    const round = async (r: number): Promise<number[]> =>
      Promise.all(
        Array.from({ length: probes }, async (_, p) => {
          await new Promise((resolve) => setTimeout(resolve, (p * periodMs) / probes));
          return upload(p, r);
        }),
      );
    const first = await round(0);
    const randomDevice = () =>
      `/device/${macOf(Math.floor(Math.random() * probes), Math.floor(Math.random() * devicesPerProbe))}`;
    const load = (duration: number) =>
      runLoad({
        url: server.url,
        duration,
        headers: { authorization: `Bearer ${benchToken}` },
        next: () => ({ path: randomDevice() }),
      });
    const alone = await load(5);
    const rounds = (async () => {
      const times: number[] = [];
      for (let r = 1; r <= laterRounds; r++) times.push(...(await round(r)));
      return times;
    })();
    const during = await load((laterRounds * periodMs) / 1000 - 2);
    const later = await rounds;
    const ms = (values: readonly number[]) =>
      `p50 ${median(values).toFixed(0)} ms, p99 ${percentile(values, 99).toFixed(0)} ms, max ${Math.max(...values).toFixed(0)} ms`;
    console.log(
      `${probes} probes x ${devicesPerProbe} devices, one cycle per probe per ${periodMs / 1000} s`,
    );
    console.log(`- first round (${probes * devicesPerProbe} New Devices), upload to 200: ${ms(first)}`);
    console.log(
      `- later rounds (${later.length} cycles, 5 % of each probe's devices change), upload to 200: ${ms(later)}`,
    );
    printHeader();
    printRow('GET /device/<mac>, alone', alone);
    printRow('GET /device/<mac>, during the probe cycles', during);
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
