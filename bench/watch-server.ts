/**
 * Child process of the port watch benchmark: the real app (createServer: real SQLite file, real
 * tool runner and nmap) listening on PORT, with `BENCH_DEVICES` devices whose devLastIP are
 * 127.0.1.1, 127.0.1.2, ... (loopback listeners answer there), each present with devWatchPorts.
 * Prints `{"ready":true,"macs":[...]}`; on the stdin line `go` it runs one port watch and prints
 * its summary `{"devices","changed","failed","wallMs"}`. Only 127.0.0.0/8 is ever scanned.
 */
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { createServer } from '../src/server.js';
import { benchToken } from './lib.js';

const dataDir = process.env.DATA_DIR ?? '.';
const count = Number(process.env.BENCH_DEVICES ?? '200');
const config = loadConfig(
  {
    DATA_DIR: dataDir,
    API_TOKEN: benchToken,
    PORT: process.env.PORT ?? '0',
    HOST: '127.0.0.1',
    PORT_WATCH_MINUTES: '0',
    TOOL_CONCURRENCY: process.env.TOOL_CONCURRENCY ?? '4',
    DNS_SERVER: '127.0.0.1:9',
    INTERNETINFO_URL: 'http://127.0.0.1:9/json',
    SPEEDTEST_SERVER_URL: 'http://127.0.0.1:9',
    SPEEDTEST_BACKEND: 'builtin',
    WOL_BROADCAST: '127.255.255.255',
  },
  dataDir,
);
const server = await createServer(config, createLogger('silent'));
const macs: string[] = [];
for (let i = 1; i <= count; i++) {
  const mac = `02:77:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;
  macs.push(mac);
  const res = await server.app.inject({
    method: 'POST',
    url: `/device/${mac}`,
    headers: { authorization: `Bearer ${benchToken}`, 'content-type': 'application/json' },
    payload: { createNew: true, devName: `bench ${i}`, devLastIP: `127.0.1.${i}`, devWatchPorts: 1 },
  });
  if (res.statusCode !== 200) throw new Error(`seeding ${mac}: ${res.statusCode} ${res.body}`);
}
// Presence is the scanner's field: set as a scan cycle would have left it.
const db = new Database(join(dataDir, 'netkeep.db'));
db.prepare('UPDATE Devices SET devPresentLastScan = 1').run();
db.close();
await server.app.listen({ port: config.PORT, host: config.HOST });
console.log(JSON.stringify({ ready: true, macs }));

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== 'go') continue;
  // How long this process's event loop was held during the watch: a GET's latency beyond it is
  // waiting for a core (the nmap processes, the machine), not for this process's own work.
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const summary = await server.watch.ports.runNow();
  loop.disable();
  const ms = (ns: number): number => Math.round(ns / 10_000) / 100;
  console.log(
    JSON.stringify({ ...summary, loopDelayP99Ms: ms(loop.percentile(99)), loopDelayMaxMs: ms(loop.max) }),
  );
}
await server.close();
