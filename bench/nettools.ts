/**
 * Network tools benchmark. Prints figures, asserts nothing. Targets are loopback only.
 *   1. What an API call costs over running the same command directly (target: at most 1.1 times),
 *      per tool that can run on loopback: nmap -F 127.0.0.1, nslookup against a DNS stand-in on
 *      127.0.0.1, traceroute -n 127.0.0.1. Interleaved pairs (the order inside a pair alternates),
 *      medians with the interquartile range, and the ratio both of the medians and per pair (a
 *      burst of load from elsewhere hits both halves of a pair). The HTTP round trip alone
 *      (GET /health) is measured the same way: no tool call can cost less than it.
 *   2. p99 of GET /device/<mac> while four `nmap -A` scans run vs idle (target: under 2x idle).
 * Both sides run from this process: the API through a keep-alive node:http client (fetch adds
 * about 0.6 ms of its own per call, which is not the server's), the command through execFile, as a
 * shell or hyperfine would start it: fork and exec from a small process.
 * Run standalone with `node dist/bench/nettools.js`, or through bench/run.ts via benchNettools().
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDnsStandIn } from '../test/helpers/dns.js';
import { tracerouteArgs } from '../src/nettools/traceroute.js';
import { KeepAliveClient } from '../test/helpers/keep-alive.js';
import { childNamed, watchdogOf } from '../test/helpers/processes.js';
import { TestServer } from '../test/helpers/server.js';
import { percentile, sharedMemoryOf } from './lib.js';

const toolEnv = { LC_ALL: 'C', PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };

function fmt(ms: number): string {
  return `${ms.toFixed(1)} ms`;
}

/** `median (p25-p75)` of the samples, in ms, or a plain ratio with `unit` ''. */
function spread(samples: number[], unit = ' ms', digits = 1): string {
  const at = (p: number): string => percentile(samples, p).toFixed(digits);
  return `${at(50)}${unit} (${at(25)}-${at(75)})`;
}

function load1(): string {
  return (loadavg()[0] ?? 0).toFixed(1);
}

function direct(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: toolEnv }, (err) => {
      if (err && typeof err.code !== 'number') reject(new Error(err.message));
      else resolve();
    });
  });
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/**
 * The API call and the command, in `pairs` interleaved pairs after a warm-up (API first in even
 * pairs, the command first in odd ones), printed as one table row.
 */
async function compare(
  name: string,
  api: () => Promise<unknown>,
  cmd: () => Promise<unknown>,
  pairs: number,
): Promise<void> {
  const loadBefore = load1();
  for (let i = 0; i < 3; i++) {
    await api();
    await cmd();
  }
  const viaApi: number[] = [];
  const viaCmd: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < pairs; i++) {
    let a: number;
    let c: number;
    if (i % 2 === 0) {
      a = await timed(api);
      c = await timed(cmd);
    } else {
      c = await timed(cmd);
      a = await timed(api);
    }
    viaApi.push(a);
    viaCmd.push(c);
    ratios.push(a / c);
  }
  const apiMedian = percentile(viaApi, 50);
  const cmdMedian = percentile(viaCmd, 50);
  console.log(
    `| ${name} | ${pairs} | ${spread(viaApi)} | ${spread(viaCmd)} | +${fmt(apiMedian - cmdMedian)} | ` +
      `${(apiMedian / cmdMedian).toFixed(2)} | ${spread(ratios, '', 2)} | ${loadBefore} → ${load1()} |`,
  );
}

/** The HTTP round trip alone, for the floor under every tool call. */
async function httpFloor(client: KeepAliveClient, count: number): Promise<void> {
  const samples: number[] = [];
  for (let i = 0; i < 20; i++) await client.ok('GET', '/health');
  const loadBefore = load1();
  for (let i = 0; i < count; i++) samples.push(await timed(() => client.ok('GET', '/health')));
  console.log(
    `| HTTP alone: GET /health | ${count} | ${spread(samples)} | - | - | - | - | ${loadBefore} → ${load1()} |`,
  );
}

const benchMac = '02:be:0c:00:00:01';

async function deviceGetLatency(
  client: KeepAliveClient,
  count: number,
): Promise<{ p50: number; p99: number }> {
  await client.ok('GET', `/device/${benchMac}`); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < count; i++) samples.push(await timed(() => client.ok('GET', `/device/${benchMac}`)));
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
  const client = new KeepAliveClient(server.port, server.token);
  const xmlDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-'));
  try {
    console.log(
      `load average at start (1, 5, 15 min): ${loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')}`,
    );
    console.log(
      '| tool | pairs | via API, median (p25-p75) | direct, median (p25-p75) | overhead | ratio of medians (target <= 1.1) | ratio per pair, median (p25-p75) | load 1 min |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    await httpFloor(client, 200);
    await compare(
      'nmap -F 127.0.0.1',
      () => client.ok('POST', '/nettools/nmap', { scan: '127.0.0.1', mode: 'fast' }),
      () =>
        // The same arguments the API builds: DNS_SERVER is the stand-in on a port other than 53,
        // which nmap cannot ask, so no reverse lookups (-n); the XML goes to a file.
        direct('/usr/bin/nmap', ['-F', '-n', '-oX', join(xmlDir, 'scan.xml'), '127.0.0.1']),
      40,
    );
    await compare(
      'nslookup bench.test (loopback DNS stand-in)',
      () => client.ok('POST', '/nettools/nslookup', { devLastIP: 'bench.test' }),
      () => direct('/usr/bin/nslookup', ['-timeout=3', `-port=${dns.port}`, 'bench.test', '127.0.0.1']),
      60,
    );
    await compare(
      'traceroute -n 127.0.0.1',
      () => client.ok('POST', '/nettools/traceroute', { devLastIP: '127.0.0.1' }),
      () => direct('/usr/sbin/traceroute', tracerouteArgs('127.0.0.1', 30)),
      100,
    );
    console.log(
      'Not measured: arp-scan (needs a LAN interface; loopback has no ARP) and speedtest-cli (needs speedtest.net).',
    );
    // The server is the start script's child (started as `npm start` runs it).
    const serverPid = childNamed(server.process.pid ?? 0, 'node');
    if (serverPid !== undefined) {
      console.log(`server: ${sharedMemoryOf(serverPid)}`);
      const watchdog = watchdogOf(serverPid);
      if (watchdog !== undefined) console.log(`tool watchdog: ${sharedMemoryOf(watchdog)}`);
    }

    await client.ok('POST', `/device/${benchMac}`, { createNew: true, devName: 'bench device' });
    const idle = await deviceGetLatency(client, 1000);
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
    const loaded = await deviceGetLatency(client, 1000);
    controller.abort(); // the disconnect kills the scans
    await Promise.all(scans);
    console.log(
      `GET /device/<mac>: idle p50 ${fmt(idle.p50)} p99 ${fmt(idle.p99)}; ` +
        `during 4 x nmap -A p50 ${fmt(loaded.p50)} p99 ${fmt(loaded.p99)} ` +
        `(ratio ${(loaded.p99 / idle.p99).toFixed(2)}, target < 2)`,
    );
    console.log(
      `load average at end (1, 5, 15 min): ${loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')}`,
    );
  } finally {
    client.close();
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
