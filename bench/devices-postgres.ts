/**
 * The devices bench on PostgreSQL (`npm run bench -- devices --store postgres`, after the SQLite
 * run): a private PostgreSQL with its durability on (fsync, synchronous commit), the same seeded
 * store copied into it by migrate-store's copy, the real server on it (DATABASE_URL), and:
 * - GET /device warm at 32 connections (served from the same cache as on SQLite), when the device
 *   view is built on PostgreSQL (else said so);
 * - POST update-column at 32 connections: durable writes per second;
 * - two servers on the database: from a write acknowledged by one server to the other server
 *   seeing it (its GET /device answer when the view is built, else its /stream carrying the write),
 *   p50/p99 over sequential writes.
 * Targets (issue 22): GET >= 80% of SQLite's, update-column >= 5,000 writes/s, visibility p99 <
 * 100 ms.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { copySqliteToPostgres } from '../src/store/postgres/copy.js';
import { openPostgres } from '../src/store/postgres/pool.js';
import { postgresMissing, startPostgres } from '../test/helpers/postgres.js';
import { benchToken, median, percentile, runLoad, type ChildServer, type LoadResult } from './lib.js';

export interface PostgresBenchOptions {
  /** The seeded SQLite store to copy. */
  readonly seeded: string;
  readonly devices: number;
  readonly seconds: number;
  readonly rounds: number;
  readonly macOf: (i: number) => string;
  readonly start: (dataDir: string, env: Record<string, string>) => Promise<ChildServer>;
  /** SQLite's GET /device warm req/s of the same run, to compare with. */
  readonly sqliteGet?: number;
}

const auth = { authorization: `Bearer ${benchToken}` };

/** One request's status and body. */
function send(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text });
        });
      },
    );
    req.once('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** B's /stream, calling `onDevice` with the MAC of each `device` message. */
function watchStream(
  url: string,
  onDevice: (mac: string) => void,
): { close: () => void; ready: Promise<void> } {
  let close = (): void => undefined;
  const ready = new Promise<void>((resolve, reject) => {
    const req = request(`${url}/stream`, { headers: { ...auth, accept: 'text/event-stream' } }, (res) => {
      resolve();
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!/^event: device$/m.test(message)) continue;
          const data = /^data: (.*)$/m.exec(message)?.[1];
          if (data !== undefined) onDevice((JSON.parse(data) as { mac: string }).mac);
        }
      });
    });
    req.once('error', reject);
    req.end();
    close = () => {
      req.destroy();
    };
  });
  return {
    close: () => {
      close();
    },
    ready,
  };
}

const rate = (r: LoadResult): string =>
  `${Math.round(r.requestsPerSecond)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms${r.non2xx > 0 || r.errors > 0 ? `, ${r.non2xx} non-2xx, ${r.errors} errors` : ''}`;

export async function benchDevicesPostgres(options: PostgresBenchOptions): Promise<void> {
  console.log('\n## devices on PostgreSQL (durable: fsync and synchronous commit on)\n');
  const missing = postgresMissing();
  if (missing !== undefined) {
    console.log(`not run: ${missing}`);
    return;
  }
  const pg = await startPostgres({ durable: true });
  const dirs = [
    mkdtempSync(join(tmpdir(), 'netkeep-bench-pg-a-')),
    mkdtempSync(join(tmpdir(), 'netkeep-bench-pg-b-')),
  ];
  const servers: ChildServer[] = [];
  try {
    const pool = await openPostgres(pg.url);
    const source = new Database(options.seeded, { readonly: true });
    const copyStart = performance.now();
    await copySqliteToPostgres(source, pool, { sourceId: options.seeded, batchSize: 5000 });
    source.close();
    await pool.query('VACUUM ANALYZE');
    await pool.close();
    console.log(`seeded store copied in ${((performance.now() - copyStart) / 1000).toFixed(1)} s`);

    const env = { DATABASE_URL: pg.url };
    const [dirA = '', dirB = ''] = dirs;
    const a = await options.start(dirA, env);
    servers.push(a);
    const randomMac = (): string => options.macOf(Math.floor(Math.random() * options.devices));

    const probe = await send(a.url, 'GET', `/device/${options.macOf(1)}`);
    const viewBuilt = probe.status === 200;
    if (viewBuilt) {
      // Warmed as on SQLite: each device once (the cache then holds them all).
      const warmStart = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < options.devices) await send(a.url, 'GET', `/device/${options.macOf(next++)}`);
        }),
      );
      console.log(
        `warmed: each of the ${options.devices} devices once in ${((performance.now() - warmStart) / 1000).toFixed(1)} s (16 connections)`,
      );
      const gets: LoadResult[] = [];
      for (let r = 0; r < options.rounds; r++)
        gets.push(
          await runLoad({
            url: a.url,
            duration: options.seconds,
            headers: auth,
            next: () => ({ path: `/device/${randomMac()}` }),
          }),
        );
      const rps = median(gets.map((g) => g.requestsPerSecond));
      const share =
        options.sqliteGet === undefined
          ? ''
          : `, ${Math.round((100 * rps) / options.sqliteGet)}% of SQLite's`;
      console.log(
        `GET /device warm: ${Math.round(rps)} req/s (median of ${options.rounds}; ${gets.map(rate).join(' | ')})${share}; target >= 80%`,
      );
    } else {
      console.log(
        `GET /device warm: not run: the device view is not built on PostgreSQL yet (${probe.status})`,
      );
    }

    let counter = 0;
    const writes: LoadResult[] = [];
    for (let r = 0; r < options.rounds; r++)
      writes.push(
        await runLoad({
          url: a.url,
          duration: options.seconds,
          method: 'POST',
          headers: auth,
          next: () => ({
            path: `/device/${randomMac()}/update-column`,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ columnName: 'devComments', columnValue: `bench ${++counter}` }),
          }),
        }),
      );
    const writeRps = median(writes.map((w) => w.requestsPerSecond));
    console.log(
      `POST update-column, 32 connections: ${Math.round(writeRps)} durable writes/s (median of ${options.rounds}; ` +
        `${writes.map(rate).join(' | ')}); target >= 5,000: ${writeRps >= 5000 ? 'met' : 'MISSED'}`,
    );

    // Two servers: a write acknowledged by A, then seen by B.
    const b = await options.start(dirB, env);
    servers.push(b);
    const samples = 200;
    const seen = new Map<string, () => void>();
    const stream = watchStream(b.url, (mac) => seen.get(mac)?.());
    await stream.ready;
    const fromAck: number[] = [];
    for (let i = 0; i < samples; i++) {
      const mac = options.macOf(i);
      const value = `seen ${i}`;
      let streamed: Promise<void> | undefined;
      if (!viewBuilt)
        streamed = new Promise<void>((resolve) => {
          seen.set(mac, resolve);
        });
      const written = await send(a.url, 'POST', `/device/${mac}/update-column`, {
        columnName: 'devComments',
        columnValue: value,
      });
      const ack = performance.now();
      if (written.status !== 200) throw new Error(`update-column on A: ${written.status} ${written.text}`);
      if (streamed !== undefined) await streamed;
      else
        for (;;) {
          const read = await send(b.url, 'GET', `/device/${mac}`);
          if (read.text.includes(`"devComments":"${value}"`)) break;
        }
      fromAck.push(performance.now() - ack);
      seen.delete(mac);
    }
    stream.close();
    console.log(
      `two servers, a write on A seen by B (${viewBuilt ? "B's GET /device" : "B's /stream; GET /device not built"}), ${samples} writes: ` +
        `p50 ${percentile(fromAck, 50).toFixed(1)} ms, p99 ${percentile(fromAck, 99).toFixed(1)} ms after A's answer; ` +
        `target p99 < 100 ms: ${percentile(fromAck, 99) < 100 ? 'met' : 'MISSED'}`,
    );
  } finally {
    for (const server of servers) await server.stop();
    await pg.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}
