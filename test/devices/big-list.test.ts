/**
 * GET /devices in bounded memory: 1,000 devices with every text field at its longest (and
 * devCustomProps near its bound), listed with limit=1000 and with no limit, while the real server's
 * resident memory is sampled from /proc. Before the list was streamed, the server built the whole
 * answer (~330 MB of JSON) in memory and died with "JavaScript heap out of memory" under npm start.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { editableFields, maxTextLength, storedFields } from '../../src/devices/catalogue.js';
import { maxJsonChars } from '../../src/json-bounds.js';
import { TestServer } from '../helpers/server.js';

const deviceCount = 1000;
const rssLimitBytes = 300 * 1024 * 1024;

function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

/**
 * Reads a `{"success":true,"devices":[...],...}` answer as it arrives and parses each device on its
 * own (the whole text is larger than a client would want to hold), with a small JSON tokenizer that
 * tracks strings and nesting. Returns the devices' MACs, the other top-level fields and the peak
 * server RSS seen while the answer streamed.
 */
async function streamList(
  server: TestServer,
  path: string,
): Promise<{
  status: number;
  contentType: string;
  macs: string[];
  top: Record<string, unknown>;
  peakRss: number;
}> {
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
          const macs: string[] = [];
          let outside = ''; // the text outside the devices' objects
          let item: Buffer[] = [];
          let inItem = false;
          let afterItem = false;
          let depth = 0;
          let inString = false;
          let escaped = false;
          res.on('data', (chunk: Buffer) => {
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
          res.on('end', () => {
            const top = JSON.parse(outside) as Record<string, unknown>;
            resolve({
              status: res.statusCode ?? 0,
              contentType: String(res.headers['content-type']),
              macs,
              top,
              peakRss,
            });
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

describe('GET /devices with 1,000 maximal devices', () => {
  let server: TestServer;
  const macs: string[] = [];

  before(async () => {
    // A body holding every field at its longest is larger than the default BODY_LIMIT.
    server = await TestServer.start({ env: { BODY_LIMIT: String(1024 * 1024) } });
    // One device through the API, every editable text field at its longest: the write path accepts it.
    const fields: Record<string, unknown> = { createNew: true };
    for (const f of editableFields) if (f.kind === 'text') fields[f.name] = 'x'.repeat(maxTextLength);
    fields.devCustomProps = [{ note: 'y'.repeat(maxJsonChars - 20) }];
    const first = '02:00:00:00:00:00';
    const res = await server.request('POST', `/device/${first}`, { body: fields });
    assert.equal(res.status, 200, res.text);
    // 999 copies straight into the table (what POST /device/copy would do, much faster).
    const db = new Database(join(server.dataDir, 'netkeep.db'));
    try {
      const columns = storedFields.map((f) => f.name);
      const row = db.prepare('SELECT * FROM Devices WHERE devMac = ?').get(first) as Record<string, unknown>;
      const insert = db.prepare(
        `INSERT INTO Devices (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
      );
      db.transaction(() => {
        for (let n = 1; n < deviceCount; n++) {
          const hex = n.toString(16).padStart(4, '0');
          insert.run({ ...row, devMac: `02:00:00:00:${hex.slice(0, 2)}:${hex.slice(2)}`, devGUID: `g${n}` });
        }
      })();
      for (const r of db.prepare('SELECT devMac FROM Devices ORDER BY devMac').all() as { devMac: string }[])
        macs.push(r.devMac);
    } finally {
      db.close();
    }
    assert.equal(macs.length, deviceCount);
  });
  after(async () => {
    await server.stop();
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
});
