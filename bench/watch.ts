/**
 * Port watch benchmark (the security watch's `nmap -F` of every watched device). Prints figures,
 * asserts nothing. The real server (bench/watch-server.ts, its own process) holds 200 present
 * devices with devWatchPorts on 127.0.1.1-200; a helper process listens on 8080 and 3306 of each.
 * One watch runs while this process sends GET /device/<mac> through a keep-alive client; printed:
 * the GET p50/p99 idle and during the watch (target p99 < 10 ms), the watch's wall time, the
 * most nmap processes the server ran at once (its tool slots: background work takes one, whatever
 * TOOL_CONCURRENCY is), and how late the server's event loop ran during the watch. Loopback only.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { KeepAliveClient } from '../test/helpers/keep-alive.js';
import { benchToken, freePort, percentile } from './lib.js';

const devices = 200;

/** nmap processes whose parent is `pid`. */
function nmapChildren(pid: number): number {
  let n = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid && stat.includes('(nmap)')) n++;
    } catch {
      // gone
    }
  }
  return n;
}

export async function run(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-watch-'));
  const listeners = spawn(
    process.execPath,
    [
      '-e',
      `const net = require('node:net'); let open = 0;
       for (let i = 1; i <= ${devices}; i++) for (const port of [8080, 3306])
         net.createServer((s) => s.destroy()).listen(port, '127.0.1.' + i, () => { if (++open === ${devices * 2}) console.log('listening'); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await freePort();
  const child = spawn(process.execPath, [join(import.meta.dirname, 'watch-server.js')], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      DATA_DIR: dataDir,
      PORT: String(port),
      BENCH_DEVICES: String(devices),
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  try {
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    await new Promise<void>((resolve) =>
      createInterface({ input: listeners.stdout }).once('line', () => {
        resolve();
      }),
    );
    const ready = JSON.parse(String((await lines.next()).value)) as { macs: string[] };
    const client = new KeepAliveClient(port, benchToken);
    const get = async (i: number): Promise<number> => {
      const mac = ready.macs[i % ready.macs.length] ?? '';
      const started = performance.now();
      const res = await client.send('GET', `/device/${mac}`);
      if (res.status !== 200) throw new Error(`GET /device: ${res.status}`);
      return performance.now() - started;
    };
    const idle: number[] = [];
    for (let i = 0; i < 2000; i++) idle.push(await get(i));

    child.stdin.write('go\n');
    const summaryLine = lines.next();
    const watch = { done: false };
    void summaryLine.then(() => {
      watch.done = true;
    });
    const during: number[] = [];
    let slots = 0;
    let i = 0;
    while (!watch.done) {
      during.push(await get(i++));
      if (i % 20 === 0) slots = Math.max(slots, nmapChildren(child.pid ?? 0));
    }
    const summary = JSON.parse(String((await summaryLine).value)) as {
      devices: number;
      failed: number;
      wallMs: number;
      loopDelayP99Ms: number;
      loopDelayMaxMs: number;
    };
    const fmt = (s: number[], p: number): string => `${percentile(s, p).toFixed(2)} ms`;
    console.log(
      `port watch of ${summary.devices} devices (${summary.failed} failed): wall ${(summary.wallMs / 1000).toFixed(1)} s, ` +
        `at most ${slots} nmap at once (TOOL_CONCURRENCY 4)`,
    );
    console.log(
      `GET /device/<mac> idle:  p50 ${fmt(idle, 50)}  p99 ${fmt(idle, 99)}  (${idle.length} requests)`,
    );
    console.log(
      `GET /device/<mac> watch: p50 ${fmt(during, 50)}  p99 ${fmt(during, 99)}  (${during.length} requests)`,
    );
    console.log(
      `server event loop during the watch: delay p99 ${summary.loopDelayP99Ms} ms, max ${summary.loopDelayMaxMs} ms`,
    );
    client.close();
  } finally {
    child.stdin.end();
    child.kill('SIGTERM');
    listeners.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('watch.js')) await run();
