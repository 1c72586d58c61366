/**
 * Lists in bounded memory: 1,000 devices with every text field at its longest (and devCustomProps
 * near its bound), listed by GET /devices with limit=1000 and with no limit, and by every other
 * answer that holds every device (NetAlertX's by-status list and export, the per-device metrics),
 * while the real server's resident memory is sampled from /proc. Before the list was streamed, the
 * server built the whole answer (~330 MB of JSON) in memory and died with "JavaScript heap out of
 * memory" under npm start; the export then still read 500 such devices (165 MB) at a time, and
 * /metrics labelled every series with the full 16 KB texts (a 65 MB answer). On both stores: on
 * PostgreSQL the server's answers are bounded the same way.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { request, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { editableFields, maxTextLength, storedFields } from '../../src/devices/catalogue.js';
import { maxJsonChars } from '../../src/json-bounds.js';
import { maxLabelChars } from '../../src/metrics/metrics.js';
import { serverNodeFlagsFor } from '../../src/node-flags.js';
import { openPostgres } from '../../src/store/postgres/pool.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../helpers/requirements.js';
import { TestServer } from '../helpers/server.js';

const deviceCount = 1000;
const rssLimitBytes = 300 * 1024 * 1024;

function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

interface Streamed {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly bytes: number;
  readonly peakRss: number;
}

/**
 * GETs `path` and hands each chunk of the answer to `onChunk` as it arrives (the whole text is
 * larger than a client would want to hold), sampling the server's RSS meanwhile.
 */
async function streamed(
  server: TestServer,
  path: string,
  onChunk: (chunk: Buffer) => void = () => undefined,
): Promise<Streamed> {
  const pid = server.process.pid ?? 0;
  let peakRss = rssBytes(pid);
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssBytes(pid));
  }, 20);
  try {
    return await new Promise((resolve, reject) => {
      const req = request(
        `${server.url}${path}`,
        { headers: { authorization: `Bearer ${server.token}` } },
        (res) => {
          let bytes = 0;
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            onChunk(chunk);
          });
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, peakRss });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
  } finally {
    clearInterval(sampler);
  }
}

/**
 * Reads a `{"success":true,"devices":[...],...}` answer as it arrives and parses each device on its
 * own, with a small JSON tokenizer that tracks strings and nesting. Returns the devices' MACs, the
 * other top-level fields and the peak server RSS seen while the answer streamed.
 */
async function streamList(
  server: TestServer,
  path: string,
): Promise<Streamed & { contentType: string; macs: string[]; top: Record<string, unknown> }> {
  const macs: string[] = [];
  let outside = ''; // the text outside the devices' objects
  let item: Buffer[] = [];
  let inItem = false;
  let afterItem = false;
  let depth = 0;
  let inString = false;
  let escaped = false;
  const result = await streamed(server, path, (chunk) => {
    let itemStart = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] ?? 0;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
      } else if (c === 0x22) inString = true;
      else if (c === 0x7b || c === 0x5b) {
        depth++;
        if (depth === 3 && c === 0x7b && !inItem) {
          inItem = true; // an object inside the devices array: one device
          itemStart = i;
        }
      } else if (c === 0x7d || c === 0x5d) {
        depth--;
        if (inItem && depth === 2) {
          item.push(chunk.subarray(itemStart, i + 1));
          const device = JSON.parse(Buffer.concat(item).toString('utf8')) as Record<string, unknown>;
          macs.push(String(device.devMac));
          assert.equal(String(device.devComments).length, maxTextLength);
          item = [];
          inItem = false;
          afterItem = true;
          continue;
        }
      }
      if (inItem) continue;
      if (afterItem && c === 0x2c) {
        afterItem = false;
        continue;
      }
      afterItem = false;
      outside += String.fromCharCode(c);
    }
    if (inItem) item.push(chunk.subarray(itemStart));
  });
  return {
    ...result,
    contentType: String(result.headers['content-type']),
    macs,
    top: JSON.parse(outside) as Record<string, unknown>,
  };
}

const skipPostgres = skipUnlessCi(postgresMissing(), 'the big list on PostgreSQL');

const copyMac = (n: number): string => {
  const hex = n.toString(16).padStart(4, '0');
  return `02:00:00:00:${hex.slice(0, 2)}:${hex.slice(2)}`;
};

/** `deviceCount - 1` copies of `first` in the SQLite file; every MAC, in order, into `macs`. */
function copySqlite(file: string, first: string, macs: string[]): void {
  const db = new Database(file);
  try {
    const columns = storedFields.map((f) => f.name);
    const row = db.prepare('SELECT * FROM Devices WHERE devMac = ?').get(first) as Record<string, unknown>;
    const insert = db.prepare(
      `INSERT INTO Devices (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
    );
    db.transaction(() => {
      for (let n = 1; n < deviceCount; n++) insert.run({ ...row, devMac: copyMac(n), devGUID: `g${n}` });
    })();
    for (const r of db.prepare('SELECT devMac FROM Devices ORDER BY devMac').all() as { devMac: string }[])
      macs.push(r.devMac);
  } finally {
    db.close();
  }
}

/** The same copies on PostgreSQL, made by PostgreSQL itself (a row is ~300 KB: not sent 999 times). */
async function copyPostgres(url: string, first: string, macs: string[]): Promise<void> {
  const pool = await openPostgres(url);
  try {
    const columns = storedFields.map((f) => f.name);
    const values = columns.map((c) =>
      c === 'devMac'
        ? `'02:00:00:00:' || substr(lpad(to_hex(n), 4, '0'), 1, 2) || ':' || substr(lpad(to_hex(n), 4, '0'), 3, 2)`
        : c === 'devGUID'
          ? `'g' || n`
          : `d."${c}"`,
    );
    await pool.query(
      `INSERT INTO "Devices" (${columns.map((c) => `"${c}"`).join(', ')})
       SELECT ${values.join(', ')} FROM "Devices" d, generate_series(1, $2::int) AS n WHERE d."devMac" = $1`,
      [first, deviceCount - 1],
    );
    for (const r of await pool.query<{ devMac: string }>('SELECT "devMac" FROM "Devices" ORDER BY "devMac"'))
      macs.push(r.devMac);
  } finally {
    await pool.close();
  }
}

for (const store of ['SQLite', 'PostgreSQL'] as const)
  describe(
    `GET /devices with 1,000 maximal devices (${store})`,
    { skip: store === 'PostgreSQL' ? skipPostgres : undefined },
    () => {
      let server: TestServer;
      let pg: PostgresServer | undefined;
      const macs: string[] = [];

      before(async () => {
        if (store === 'PostgreSQL') {
          requireAll(postgresMissing());
          pg = await startPostgres();
        }
        // A body holding every field at its longest is larger than the default BODY_LIMIT. The server
        // runs with the heap flags npm start gives it (a 512 MiB old generation): the bound is what
        // counts in production, and V8 left to size its own heap collects late, which blurs the RSS.
        server = await TestServer.start({
          env: {
            BODY_LIMIT: String(1024 * 1024),
            NODE_OPTIONS: serverNodeFlagsFor('', totalmem()).join(' '),
            ...(pg === undefined ? {} : { DATABASE_URL: pg.url }),
          },
        });
        // One device through the API, every editable text field at its longest: the write path accepts it.
        const fields: Record<string, unknown> = { createNew: true };
        for (const f of editableFields) if (f.kind === 'text') fields[f.name] = 'x'.repeat(maxTextLength);
        fields.devCustomProps = [{ note: 'y'.repeat(maxJsonChars - 20) }];
        const first = '02:00:00:00:00:00';
        const res = await server.request('POST', `/device/${first}`, { body: fields });
        assert.equal(res.status, 200, res.text);
        // 999 copies straight into the table (what POST /device/copy would do, much faster).
        if (pg === undefined) copySqlite(join(server.dataDir, 'netkeep.db'), first, macs);
        else await copyPostgres(pg.url, first, macs);
        assert.equal(macs.length, deviceCount);
      });
      after(async () => {
        await server.stop();
        await pg?.stop();
      });

      for (const path of ['/devices?limit=1000', '/devices']) {
        test(`${path}: every device, in order, while the server's RSS stays under 300 MB`, async (t) => {
          const result = await streamList(server, path);
          t.diagnostic(`peak server RSS ${Math.round(result.peakRss / 1024 / 1024)} MB`);
          assert.equal(result.status, 200);
          assert.equal(result.contentType, 'application/json; charset=utf-8');
          assert.deepEqual(result.macs, macs);
          assert.deepEqual(result.top, {
            success: true,
            devices: [],
            total: deviceCount,
            offset: 0,
            limit: path.includes('limit') ? 1000 : null,
          });
          assert.ok(
            result.peakRss < rssLimitBytes,
            `peak RSS ${Math.round(result.peakRss / 1024 / 1024)} MB (limit ${rssLimitBytes / 1024 / 1024} MB)`,
          );
          // The server is still up and answers the next request.
          assert.equal((await server.request('GET', '/health', { token: null })).status, 200);
        });
      }

      /** The peak RSS is under the limit, the answer was streamed (not built whole), the server lives. */
      async function assertBounded(path: string, result: Streamed, t: { diagnostic(text: string): void }) {
        t.diagnostic(
          `${path}: ${Math.round(result.bytes / 1024 / 1024)} MB answered, peak server RSS ${Math.round(result.peakRss / 1024 / 1024)} MB`,
        );
        assert.equal(result.status, 200, path);
        assert.ok(
          result.peakRss < rssLimitBytes,
          `${path}: peak RSS ${Math.round(result.peakRss / 1024 / 1024)} MB (limit ${rssLimitBytes / 1024 / 1024} MB)`,
        );
        assert.equal((await server.request('GET', '/health', { token: null })).status, 200);
      }

      test('GET /devices/export (CSV): every device, in short pages, while RSS stays under 300 MB', async (t) => {
        let lines = 0;
        const result = await streamed(server, '/devices/export', (chunk) => {
          for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++;
        });
        await assertBounded('/devices/export', result, t);
        assert.equal(result.headers['content-type'], 'text/csv; charset=utf-8');
        assert.equal(lines, deviceCount + 1, 'a header line and one line per device');
      });

      test('GET /devices/export/json: every device, in short pages, while RSS stays under 300 MB', async (t) => {
        let head = '';
        let tail = '';
        const result = await streamed(server, '/devices/export/json', (chunk) => {
          if (head.length < 64) head += chunk.toString('latin1', 0, 64);
          tail = (tail + chunk.toString('latin1')).slice(-4096);
        });
        await assertBounded('/devices/export/json', result, t);
        assert.ok(head.startsWith('{"data":[{"devMac":"02:00:00:00:00:00"'), head);
        assert.ok(tail.endsWith(`],"columns":${JSON.stringify(storedFields.map((f) => f.name))}}`));
      });

      test('GET /devices/by-status: streamed, every device with its full name', async (t) => {
        const chunks: Buffer[] = [];
        const result = await streamed(server, '/devices/by-status', (chunk) => chunks.push(chunk));
        await assertBounded('/devices/by-status', result, t);
        // Streamed as it is read: not one Content-Length answer built whole in memory.
        assert.equal(result.headers['transfer-encoding'], 'chunked');
        assert.equal(result.headers['content-length'], undefined);
        const items = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; title: string }[];
        assert.deepEqual(
          items.map((i) => i.id),
          macs,
        );
        assert.ok(items.every((i) => i.title.length === maxTextLength));
      });

      test('GET /metrics: device labels cut to a bounded length, so the answer stays small', async (t) => {
        const chunks: Buffer[] = [];
        const result = await streamed(server, '/metrics', (chunk) => chunks.push(chunk));
        await assertBounded('/metrics', result, t);
        const series = Buffer.concat(chunks)
          .toString('utf8')
          .split('\n')
          .filter((line) => line.startsWith('netalertx_device_status{'));
        assert.equal(series.length, deviceCount);
        const cut = `${'x'.repeat(maxLabelChars - 1)}\u2026`;
        assert.ok(series[0]?.includes(`device="${cut}"`), series[0]?.slice(0, 400));
        assert.ok(series[0]?.includes(`vendor="${cut}"`));
        assert.ok(
          result.bytes < deviceCount * 4 * 1024,
          `${result.bytes} bytes for ${deviceCount} devices (at most ~2 KB each)`,
        );
      });
    },
  );
