/**
 * `npm run bench -- soak`: a mixed load held for BENCH_SOAK_SECONDS (60) against the real server
 * (child process, loopback), with everything the live stream has to carry going on at once:
 *
 * - HTTP load (autocannon, 16 connections): GET /device/<mac> (70 %), GET /devices?limit=50 (15 %),
 *   POST /device/<mac> changing a comment (10 %), GET /health (5 %);
 * - a presence scan cycle every 2 s (the stand-in arp-scan of test/helpers: 200 hosts alternating
 *   between two sets, so 400 events a cycle);
 * - a CSV import of 2,000 devices every 10 s (POST /devices/import);
 * - one /stream client that reads everything and checks that its ids follow each other, and 8
 *   stalled /stream clients that never read (resumed at the end to see which the server dropped).
 *
 * Prints requests, errors, latency, the stream's messages by event, and the server's RSS sampled
 * every 5 s. Asserts nothing.
 */
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serverNodeFlagsFor } from '../src/node-flags.js';
import { fakeArpScanMac, fakeArpScanSubnet, writeFakeArpScan } from '../test/helpers/fake-arp-scan.js';
import { benchToken, memoryOf, runLoad, startChild } from './lib.js';

const mainScript = fileURLToPath(new URL('../src/main.js', import.meta.url));
const seconds = Number(process.env.BENCH_SOAK_SECONDS ?? '60');
const hostsPerSet = 200;
const importSize = 2000;
const stalledClients = 8;
const headers = { authorization: `Bearer ${benchToken}` };

/** The /stream client that reads: messages by event, and ids that did not follow the previous one. */
function readingClient(url: string): { counts: Map<string, number>; gaps: () => number; close: () => void } {
  const counts = new Map<string, number>();
  let last = 0;
  let gaps = 0;
  let tail = '';
  const request = http.get(
    `${url}/stream`,
    { headers: { ...headers, accept: 'text/event-stream' } },
    (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const blocks = (tail + chunk).split('\n\n');
        tail = blocks.pop() ?? '';
        for (const block of blocks) {
          const id = /^id: [0-9a-z]+-(\d+)$/m.exec(block)?.[1];
          const event = /^event: (.+)$/m.exec(block)?.[1];
          if (event === undefined) continue;
          counts.set(event, (counts.get(event) ?? 0) + 1);
          if (id !== undefined) {
            if (last !== 0 && Number(id) !== last + 1) gaps++;
            last = Number(id);
          }
        }
      });
    },
  );
  request.on('error', () => undefined);
  return { counts, gaps: () => gaps, close: () => request.destroy() };
}

/** A /stream client that sends its request and never reads. */
async function stalledClient(port: number): Promise<{ socket: Socket; closed: () => boolean }> {
  const socket = connect(port, '127.0.0.1');
  let closed = false;
  socket.on('close', () => {
    closed = true;
  });
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${benchToken}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  socket.pause();
  return { socket, closed: () => closed };
}

/** Waits `ms`, or less once `state.running` is false. */
async function pause(ms: number, state: { readonly running: boolean }): Promise<void> {
  for (let waited = 0; waited < ms; waited += 250) {
    if (!state.running) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function importBody(round: number): string {
  const hex = (n: number): string => n.toString(16).padStart(2, '0');
  const rows = Array.from(
    { length: importSize },
    (_, i) => `"0a:00:00:00:${hex(i >> 8)}:${hex(i & 255)}","imported ${round}"\r\n`,
  );
  return JSON.stringify({
    content: Buffer.from(`"devMac","devName"\r\n${rows.join('')}`).toString('base64'),
  });
}

export async function run(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-soak-'));
  const toolDir = mkdtempSync(join(tmpdir(), 'netkeep-bench-soak-tools-'));
  writeFakeArpScan(toolDir, hostsPerSet);
  const server = await startChild(
    mainScript,
    {
      DATA_DIR: dataDir,
      API_TOKEN: benchToken,
      TOOL_PATH: toolDir,
      SCAN_TOOL: 'arp-scan',
      SCAN_SUBNETS: fakeArpScanSubnet,
      SCAN_INTERVAL: '86400',
      BODY_LIMIT: String(1024 * 1024),
    },
    '/health',
    serverNodeFlagsFor('', totalmem()),
  );
  const pid = server.process.pid ?? 0;
  const port = Number(new URL(server.url).port);
  const post = async (path: string, body?: string): Promise<number> => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body,
    });
    await res.arrayBuffer();
    return res.status;
  };
  try {
    await post('/nettools/scan'); // the first cycle: 200 new devices
    const reader = readingClient(server.url);
    const stalled = await Promise.all(Array.from({ length: stalledClients }, () => stalledClient(port)));
    const rss: number[] = [memoryOf(pid).rssMiB];
    const side = { cycles: 0, cycleErrors: 0, imports: 0, importErrors: 0 };
    const state = { running: true };
    const loops = [
      (async () => {
        while (state.running) {
          if ((await post('/nettools/scan')) === 200) side.cycles++;
          else side.cycleErrors++;
          await new Promise((resolve) => setTimeout(resolve, 2000));
        }
      })(),
      (async () => {
        for (let round = 1; state.running; round++) {
          if ((await post('/devices/import', importBody(round))) === 200) side.imports++;
          else side.importErrors++;
          await pause(10_000, state);
        }
      })(),
      (async () => {
        while (state.running) {
          await new Promise((resolve) => setTimeout(resolve, 5000));
          rss.push(memoryOf(pid).rssMiB);
        }
      })(),
    ];
    let n = 0;
    const load = await runLoad({
      url: server.url,
      connections: 16,
      duration: seconds,
      headers,
      next: () => {
        const k = n++;
        const mac = fakeArpScanMac(k % (2 * hostsPerSet));
        const pick = k % 20;
        if (pick < 14) return { path: `/device/${mac}` };
        if (pick < 17) return { path: '/devices?limit=50' };
        if (pick < 19)
          return {
            path: `/device/${mac}`,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ devComments: `soak ${k}` }),
          };
        return { path: '/health' };
      },
    });
    state.running = false;
    await Promise.all(loops);
    // A second for the last messages to reach the reader, then one for the stalled clients to see a close.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const client of stalled) client.socket.resume();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const memory = memoryOf(pid);
    const messages = [...reader.counts].map(([event, count]) => `${event} ${count}`).join(', ');
    console.log(`soak: ${seconds} s, HTTP load of 16 connections plus scan cycles, imports and streams`);
    console.log(
      `  requests ${load.total} (${Math.round(load.requestsPerSecond)}/s), errors ${load.errors}, ` +
        `non-2xx ${load.non2xx}, p50 ${load.p50} ms, p99 ${load.p99} ms`,
    );
    console.log(
      `  scan cycles ${side.cycles} (failed ${side.cycleErrors}), imports of ${importSize} devices ${side.imports} ` +
        `(failed ${side.importErrors})`,
    );
    console.log(`  reading /stream client: ${messages}; id gaps ${reader.gaps()}`);
    console.log(
      `  stalled /stream clients: ${stalled.filter((c) => c.closed()).length} of ${stalledClients} dropped by the server`,
    );
    console.log(
      `  server RSS MiB every 5 s: ${rss.map((v) => v.toFixed(0)).join(' ')}; at the end ${memory.rssMiB.toFixed(0)}, ` +
        `peak ${memory.peakMiB.toFixed(0)}`,
    );
    reader.close();
    for (const client of stalled) client.socket.destroy();
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(toolDir, { recursive: true, force: true });
  }
}
