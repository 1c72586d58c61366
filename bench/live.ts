/**
 * `npm run bench -- live`: GET /stream under load, on the real server (child process, loopback).
 *
 *   1. Fan-out: 1,000 concurrent /stream clients while scan cycles write 1,000 events each (the
 *      real scanner and store; discovery by the stand-in arp-scan of test/helpers, which prints 500
 *      hosts alternating between two sets, so each cycle connects 500 devices and disconnects
 *      500). Latency is measured per event, from the moment the cycle's transaction committed (the
 *      server's "scan cycle applied" log line, written after the commit and right before the
 *      change feed is told: millisecond clock, the same wall clock as this process) to the moment
 *      a client read the chunk holding the event. Targets: p99 < 50 ms, server RSS < 200 MB.
 *   2. Device GET throughput (autocannon, GET /device/<mac> of the 1,000 devices) with no stream
 *      open and with 1,000 idle streams open, in interleaved rounds. Target: within 10%.
 *
 * The server runs with LOG_LEVEL=info (the default) and its log goes to a file, read after each
 * cycle, so the load generator never spends time on it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, openSync, closeSync } from 'node:fs';
import http from 'node:http';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serverNodeFlagsFor } from '../src/node-flags.js';
import { fakeArpScanMac, fakeArpScanSubnet, writeFakeArpScan } from '../test/helpers/fake-arp-scan.js';
import { benchToken, freePort, median, memoryOf, runLoad } from './lib.js';

const mainScript = fileURLToPath(new URL('../src/main.js', import.meta.url));

const clientCount = Number(process.env.BENCH_LIVE_CLIENTS ?? '1000');
const hostsPerSet = 500; // 2 x 500 = 1,000 events per cycle after the first
const cycles = Number(process.env.BENCH_LIVE_CYCLES ?? '6');
const rounds = Number(process.env.BENCH_LIVE_ROUNDS ?? '3');
const loadSeconds = Number(process.env.BENCH_LIVE_SECONDS ?? '5');

const deviceEventMarker = Buffer.from('event: device-event\n');
const scanMarker = Buffer.from('event: scan\n');

/** One /stream client that counts the device events it reads, stamped per chunk (wall clock, ms). */
class StreamClient {
  /** [receipt time, number of device events in that chunk]. */
  readonly receipts: [number, number][] = [];
  scans = 0;
  private tail = Buffer.alloc(0);
  private request: http.ClientRequest | undefined;

  constructor(
    private readonly url: string,
    private readonly agent: http.Agent,
  ) {}

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.request = http.get(
        `${this.url}/stream`,
        {
          agent: this.agent,
          headers: { authorization: `Bearer ${benchToken}`, accept: 'text/event-stream' },
        },
        (res) => {
          if (res.statusCode !== 200) {
            reject(new Error(`GET /stream answered ${res.statusCode}`));
            return;
          }
          res.on('data', (chunk: Buffer) => {
            this.onChunk(chunk, performance.timeOrigin + performance.now());
          });
          res.on('error', () => undefined);
          resolve();
        },
      );
      this.request.on('error', reject);
    });
  }

  close(): void {
    this.request?.destroy();
  }

  private onChunk(chunk: Buffer, at: number): void {
    // A marker may straddle two chunks: the end of the previous chunk is searched with the start
    // of this one (a few bytes, so no chunk is ever copied whole).
    const seam = Buffer.concat([this.tail, chunk.subarray(0, deviceEventMarker.length - 1)]);
    const events = count(chunk, deviceEventMarker) + count(seam, deviceEventMarker);
    if (events > 0) this.receipts.push([at, events]);
    this.scans += count(chunk, scanMarker) + count(seam, scanMarker);
    this.tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - deviceEventMarker.length + 1)));
  }
}

function count(buffer: Buffer, marker: Buffer): number {
  let n = 0;
  for (let at = buffer.indexOf(marker); at >= 0; at = buffer.indexOf(marker, at + marker.length)) n++;
  return n;
}

/** The value below which `fraction` of the weighted samples lie. */
function percentile(samples: [number, number][], fraction: number): number {
  const sorted = [...samples].sort((a, b) => a[0] - b[0]);
  const total = sorted.reduce((n, [, w]) => n + w, 0);
  let seen = 0;
  for (const [value, weight] of sorted) {
    seen += weight;
    if (seen >= total * fraction) return value;
  }
  return sorted.at(-1)?.[0] ?? 0;
}

async function until(check: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export async function run(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-live-'));
  const toolDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-live-tools-'));
  writeFakeArpScan(toolDir, hostsPerSet);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const logFile = join(dataDir, 'server.log');
  const logFd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...serverNodeFlagsFor('', totalmem()), mainScript], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      API_TOKEN: benchToken,
      LOG_LEVEL: 'info',
      TOOL_PATH: toolDir,
      SCAN_TOOL: 'arp-scan',
      SCAN_SUBNETS: fakeArpScanSubnet,
      SCAN_INTERVAL: '86400',
      // The fan-out needs every client connected: room for them all, and connections to spare.
      MAX_STREAMS: String(clientCount),
      MAX_CONNECTIONS: String(clientCount + 64),
    },
    stdio: ['ignore', logFd, 'inherit'],
  });
  closeSync(logFd);
  const pid = child.pid ?? 0;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const headers = { authorization: `Bearer ${benchToken}` };
  const appliedTimes = (): number[] =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((line) => line.includes('"msg":"scan cycle applied"'))
      .map((line) => (JSON.parse(line) as { time: number }).time);
  const scanNow = async (): Promise<void> => {
    const res = await fetch(`${url}/nettools/scan`, { method: 'POST', headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`POST /nettools/scan answered ${res.status}`);
  };

  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  try {
    await until(() => appliedTimes().length >= 1, 'the first cycle');
    await scanNow(); // both host sets exist now: 1,000 devices
    const idleRss = memoryOf(pid).rssMiB;

    const openClients = async (): Promise<StreamClient[]> => {
      const clients = Array.from({ length: clientCount }, () => new StreamClient(url, agent));
      // In groups, so the listen backlog never overflows.
      for (let i = 0; i < clients.length; i += 100)
        await Promise.all(clients.slice(i, i + 100).map((c) => c.open()));
      return clients;
    };

    // 1. Fan-out latency and RSS.
    const clients = await openClients();
    let peakRss = memoryOf(pid).rssMiB;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, memoryOf(pid).rssMiB);
    }, 20);
    const perCycle: { p50: number; p99: number; max: number }[] = [];
    for (let cycle = 1; cycle <= cycles; cycle++) {
      const before = appliedTimes().length;
      for (const c of clients) c.receipts.length = 0;
      await scanNow();
      await until(() => clients.every((c) => c.scans >= cycle), `cycle ${cycle} at every client`);
      const applied = appliedTimes()[before];
      if (applied === undefined) throw new Error('no "scan cycle applied" line for the cycle');
      const samples = clients.flatMap((c) =>
        c.receipts.map(([at, n]): [number, number] => [at - applied, n]),
      );
      const events = samples.reduce((n, [, w]) => n + w, 0);
      if (events !== clientCount * 2 * hostsPerSet)
        throw new Error(
          `cycle ${cycle}: ${events} events received, expected ${clientCount * 2 * hostsPerSet}`,
        );
      perCycle.push({
        p50: percentile(samples, 0.5),
        p99: percentile(samples, 0.99),
        max: percentile(samples, 1),
      });
    }
    clearInterval(sampler);
    const withStreamsRss = memoryOf(pid);
    console.log(
      `fan-out: ${clientCount} /stream clients, ${cycles} cycles of ${2 * hostsPerSet} events (${clientCount * 2 * hostsPerSet} deliveries each)`,
    );
    console.log('| cycle | p50 ms | p99 ms | max ms |');
    console.log('| ---: | ---: | ---: | ---: |');
    perCycle.forEach((c, i) => {
      console.log(`| ${i + 1} | ${c.p50.toFixed(1)} | ${c.p99.toFixed(1)} | ${c.max.toFixed(1)} |`);
    });
    const p50s = perCycle.map((c) => c.p50);
    const p99s = perCycle.map((c) => c.p99);
    console.log(
      `fan-out latency (commit to receipt): p50 median ${median(p50s).toFixed(1)} ms (range ${Math.min(...p50s).toFixed(1)}-${Math.max(...p50s).toFixed(1)}), ` +
        `p99 median ${median(p99s).toFixed(1)} ms (range ${Math.min(...p99s).toFixed(1)}-${Math.max(...p99s).toFixed(1)}) (target p99 < 50 ms)`,
    );
    console.log(
      `server RSS: idle ${idleRss.toFixed(0)} MiB, peak sampled during the cycles ${peakRss.toFixed(0)} MiB, ` +
        `after ${withStreamsRss.rssMiB.toFixed(0)} MiB, VmHWM ${withStreamsRss.peakMiB.toFixed(0)} MiB (target < 200 MB)`,
    );

    // 2. GET throughput with the streams open (idle) and with none, interleaved.
    let k = 0;
    const load = () =>
      runLoad({
        url,
        duration: loadSeconds,
        headers,
        next: () => ({ path: `/device/${fakeArpScanMac(k++ % (2 * hostsPerSet))}` }),
      });
    const withStreams: number[] = [];
    const without: number[] = [];
    let open: StreamClient[] | undefined = clients;
    const closeAll = async (): Promise<void> => {
      for (const c of open ?? []) c.close();
      open = undefined;
      await new Promise((resolve) => setTimeout(resolve, 500)); // the server sees the closes
    };
    // Warm-up (JIT, and the server's GET cache of each device), not measured.
    await runLoad({
      url,
      amount: 4 * 2 * hostsPerSet,
      headers,
      next: () => ({ path: `/device/${fakeArpScanMac(k++ % (2 * hostsPerSet))}` }),
    });
    for (let round = 0; round < rounds; round++) {
      // Alternate which case goes first, so a drift in the machine's load favours neither.
      for (const withOpen of round % 2 === 0 ? [true, false] : [false, true]) {
        if (withOpen) open ??= await openClients();
        else await closeAll();
        const result = await load();
        if (result.errors + result.non2xx > 0) throw new Error('GET load had errors');
        (withOpen ? withStreams : without).push(result.requestsPerSecond);
      }
    }
    await closeAll();
    const ratio = median(withStreams) / median(without);
    console.log(
      `GET /device/<mac> req/s, ${rounds} interleaved rounds of ${loadSeconds} s: with ${clientCount} open streams ` +
        `median ${Math.round(median(withStreams))} (${withStreams.map(Math.round).join(', ')}), ` +
        `none median ${Math.round(median(without))} (${without.map(Math.round).join(', ')}); ` +
        `ratio ${ratio.toFixed(3)} (target >= 0.90)`,
    );
  } finally {
    agent.destroy();
    child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(toolDir, { recursive: true, force: true });
  }
}
