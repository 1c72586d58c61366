/**
 * Network tools benchmark. Prints figures, asserts nothing. Targets are loopback only.
 *   1. overhead of the API over running the same command directly (median latency ratio, target
 *      <= 1.1): POST /nettools/nmap (fast, 127.0.0.1) and POST /nettools/nslookup (against a DNS
 *      stand-in on loopback);
 *   2. p99 of GET /device/<mac> while four `nmap -A` scans run vs idle (target: under 2x idle).
 * Run standalone with `node dist/bench/nettools.js`, or through bench/run.ts via benchNettools().
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDnsStandIn } from '../test/helpers/dns.js';
import { tracerouteArgs } from '../src/nettools/traceroute.js';
import { TestServer } from '../test/helpers/server.js';

const toolEnv = { LC_ALL: 'C', PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function timeIt(fn: () => Promise<unknown>, runs: number): Promise<number[]> {
  await fn(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  return samples;
}

function direct(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: toolEnv }, (err) => {
      if (err && typeof err.code !== 'number') reject(new Error(err.message));
      else resolve();
    });
  });
}

function fmt(ms: number): string {
  return `${ms.toFixed(1)} ms`;
}

/**
 * Median latency of the API call and of the same command run directly, measured in interleaved
 * pairs (API, direct, API, direct, ...) so that a burst of load from elsewhere hits both sides.
 */
async function compare(
  name: string,
  api: () => Promise<unknown>,
  cmd: () => Promise<unknown>,
  runs: number,
): Promise<void> {
  await api(); // warm-up
  await cmd();
  const viaApi: number[] = [];
  const viaCmd: number[] = [];
  for (let i = 0; i < runs; i++) {
    for (const [fn, samples] of [
      [api, viaApi],
      [cmd, viaCmd],
    ] as const) {
      const started = performance.now();
      await fn();
      samples.push(performance.now() - started);
    }
  }
  const apiMedian = percentile(viaApi, 50);
  const cmdMedian = percentile(viaCmd, 50);
  console.log(
    `| ${name} | ${fmt(apiMedian)} | ${fmt(cmdMedian)} | +${fmt(apiMedian - cmdMedian)} | ${(apiMedian / cmdMedian).toFixed(2)} |`,
  );
}

const benchMac = '02:be:0c:00:00:01';

async function deviceGetLatency(server: TestServer, count: number): Promise<{ p50: number; p99: number }> {
  const samples = await timeIt(async () => {
    const res = await server.request('GET', `/device/${benchMac}`);
    if (res.status !== 200) throw new Error(`GET /device answered ${res.status}`);
  }, count);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

export async function benchNettools(): Promise<void> {
  console.log('## nettools');
  const dns = await startDnsStandIn({ 'bench.test': '127.0.0.5' });
  const server = await TestServer.start({
    // LOG_LEVEL stays info: TestServer waits for the 'listening' line.
    env: { DNS_SERVER: dns.address, TOOL_CONCURRENCY: '8' },
    viaStartScript: true, // the server as `npm start` runs it, with its V8 flags
  });
  const xmlDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-'));
  try {
    console.log(
      '| tool (medians of interleaved runs) | via API | direct | overhead | ratio (target <= 1.1) |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: |');
    await compare(
      'nmap -F 127.0.0.1',
      async () => {
        const res = await server.request('POST', '/nettools/nmap', {
          body: { scan: '127.0.0.1', mode: 'fast' },
        });
        if (res.status !== 200) throw new Error(res.text);
      },
      () =>
        // The same arguments the API builds: DNS_SERVER is the stand-in on a port other than 53,
        // which nmap cannot ask, so no reverse lookups (-n).
        direct('/usr/bin/nmap', ['-F', '-n', '-oX', join(xmlDir, 'scan.xml'), '127.0.0.1']),
      20,
    );
    await compare(
      'nslookup bench.test (loopback DNS stand-in)',
      async () => {
        const res = await server.request('POST', '/nettools/nslookup', { body: { devLastIP: 'bench.test' } });
        if (res.status !== 200) throw new Error(res.text);
      },
      () => direct('/usr/bin/nslookup', ['-timeout=3', `-port=${dns.port}`, 'bench.test', '127.0.0.1']),
      30,
    );
    await compare(
      'traceroute 127.0.0.1',
      async () => {
        const res = await server.request('POST', '/nettools/traceroute', {
          body: { devLastIP: '127.0.0.1' },
        });
        if (res.status !== 200) throw new Error(res.text);
      },
      () => direct('/usr/sbin/traceroute', tracerouteArgs('127.0.0.1', 30)),
      30,
    );

    const created = await server.request('POST', `/device/${benchMac}`, {
      body: { createNew: true, devName: 'bench device' },
    });
    if (created.status !== 200) throw new Error(created.text);
    const idle = await deviceGetLatency(server, 1000);
    const controller = new AbortController();
    const scans = Array.from({ length: 4 }, () =>
      server
        .request('POST', '/nettools/nmap', {
          body: { scan: '127.0.0.1', mode: 'detail' },
          signal: controller.signal,
        })
        .catch(() => undefined),
    );
    await new Promise((resolve) => setTimeout(resolve, 2000)); // let the scans get going
    const loaded = await deviceGetLatency(server, 1000);
    controller.abort(); // the disconnect kills the scans
    await Promise.all(scans);
    console.log(
      `GET /device/<mac>: idle p50 ${fmt(idle.p50)} p99 ${fmt(idle.p99)}; ` +
        `during 4 x nmap -A p50 ${fmt(loaded.p50)} p99 ${fmt(loaded.p99)} ` +
        `(ratio ${(loaded.p99 / idle.p99).toFixed(2)}, target < 2)`,
    );
  } finally {
    await server.stop();
    await dns.close();
    rmSync(xmlDir, { recursive: true, force: true });
  }
}

/** Entry point for bench/run.ts. */
export const run = benchNettools;

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  benchNettools().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
