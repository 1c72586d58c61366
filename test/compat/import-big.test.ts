/**
 * POST /devices/import at inventory scale, against a real server over real HTTP: the README's
 * export -> import round trip of 10,000 devices in both forms (multipart `file`, JSON base64), and
 * the bodies it must refuse without changing anything: 64 MiB of garbage (400 naming the first bad
 * line), a body over IMPORT_BODY_LIMIT (413), a big body without a token (refused unread).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { editableFields } from '../../src/devices/catalogue.js';
import { TestServer } from '../helpers/server.js';

type Json = Record<string, unknown>;

const mib = 1024 * 1024;
const boundary = '----netkeep-big-import';
const count = 10_000;

interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly json: Json;
}

/**
 * POSTs `body` in 64 KiB writes (chunked when `length` is not given) and resolves with the answer,
 * which may come before the body is sent: writes the server no longer reads are then dropped.
 */
function post(
  server: TestServer,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  chunked = false,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(`${server.url}${path}`, {
      method: 'POST',
      headers: chunked ? headers : { ...headers, 'content-length': String(body.length) },
    });
    req.on('response', (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json: JSON.parse(text) as Json });
      });
      res.on('error', reject);
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    let offset = 0;
    const writeMore = (): void => {
      while (offset < body.length && !answered) {
        const part = body.subarray(offset, offset + 64 * 1024);
        offset += part.length;
        if (!req.write(part)) {
          req.once('drain', writeMore);
          return;
        }
      }
      if (!answered) req.end();
    };
    writeMore();
  });
}

function multipart(csv: Buffer): { headers: Record<string, string>; body: Buffer } {
  return {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="devices.csv"\r\n` +
          'Content-Type: text/csv\r\n\r\n',
      ),
      csv,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
  };
}

function jsonForm(csv: Buffer): { headers: Record<string, string>; body: Buffer } {
  return {
    headers: { 'content-type': 'application/json' },
    body: Buffer.from(`{"content":"${csv.toString('base64')}"}`),
  };
}

const hex = (byte: number): string => byte.toString(16).padStart(2, '0');

const auth = (server: TestServer): Record<string, string> => ({ authorization: `Bearer ${server.token}` });

/** 10,000 devices with values a CSV must carry: quotes, commas, newlines, formula starts, non-ASCII. */
function inventoryCsv(): Buffer {
  const quote = (v: string): string => `"${v.replace(/"/g, '""')}"`;
  const lines = ['"devMac","devName","devOwner","devComments","devFavorite","devGroup"'];
  for (let i = 0; i < count; i++) {
    const mac = `02:00:00:${[i >> 16, (i >> 8) & 255, i & 255].map(hex).join(':')}`;
    const name = i % 7 === 0 ? `=cmd|' /C calc'!A${i}` : `Gerät ${i}, "Küche"`;
    lines.push(
      [mac, name, `owner ${i % 13}`, `line one\nline two ${i}`, String(i % 2), `group-${i % 5}`]
        .map(quote)
        .join(','),
    );
  }
  return Buffer.from(`${lines.join('\r\n')}\r\n`);
}

async function exportCsv(server: TestServer): Promise<string> {
  const res = await server.request('GET', '/devices/export');
  assert.equal(res.status, 200);
  return res.text;
}

/** Every device's editable fields (what an import sets), by MAC. */
async function editableView(server: TestServer): Promise<Map<string, Json>> {
  const res = await server.request('GET', '/devices/export/json');
  assert.equal(res.status, 200);
  const rows = res.json.data as Json[];
  return new Map(
    rows.map((row) => [
      String(row.devMac),
      Object.fromEntries(editableFields.map((f) => [f.name, row[f.name]])),
    ]),
  );
}

describe('POST /devices/import: 10,000 devices both ways, and the bodies it refuses', () => {
  let source: TestServer;
  let target: TestServer;
  let exported: string;

  before(async () => {
    [source, target] = await Promise.all([TestServer.start(), TestServer.start()]);
  });
  after(async () => {
    await Promise.all([source.stop(), target.stop()]);
  });

  test('a 10,000-device CSV imports in one request (multipart file, past BODY_LIMIT)', async () => {
    const { headers, body } = multipart(inventoryCsv());
    assert.ok(body.length > 10 * 64 * 1024, 'well past the 64 KiB BODY_LIMIT');
    const res = await post(source, '/devices/import', { ...headers, ...auth(source) }, body);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.deepEqual([res.json.inserted, res.json.updated, res.json.skipped_lines], [count, 0, []]);
    const device = await source.request('GET', '/device/02:00:00:00:00:07');
    assert.equal(device.json.devName, "=cmd|' /C calc'!A7");
    assert.equal(device.json.devComments, 'line one\nline two 7');
    exported = await exportCsv(source);
    assert.equal(exported.split('\r\n').filter((l) => l.startsWith('"02:00:00:')).length, count);
  });

  test('the export imports back in the JSON form: 10,000 updated, the export unchanged', async () => {
    const { headers, body } = jsonForm(Buffer.from(exported));
    const res = await post(source, '/devices/import', { ...headers, ...auth(source) }, body);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.deepEqual([res.json.inserted, res.json.updated, res.json.skipped_lines], [0, count, []]);
    assert.equal(await exportCsv(source), exported);
  });

  test('the export moves to another server in both forms, chunked or not: every device as it was', async () => {
    const want = await editableView(source);
    const forms = [
      { form: jsonForm, chunked: true, inserted: count },
      { form: multipart, chunked: false, inserted: 0 },
    ];
    for (const { form, chunked, inserted } of forms) {
      const { headers, body } = form(Buffer.from(exported));
      const res = await post(target, '/devices/import', { ...headers, ...auth(target) }, body, chunked);
      assert.equal(res.status, 200, JSON.stringify(res.json));
      assert.deepEqual([res.json.inserted, res.json.updated], [inserted, count - inserted]);
      assert.deepEqual(await editableView(target), want);
    }
  });

  test('64 MiB of garbage in either form: 400 naming the first bad line, nothing changed', async () => {
    const before = await exportCsv(target);
    const random = randomBytes(64 * mib - 1024);
    const garbage: Array<[{ headers: Record<string, string>; body: Buffer }, RegExp]> = [
      // Random bytes fail on their first line: not UTF-8, or no devMac column.
      [multipart(random), /the header \(line 0\)/],
      [jsonForm(random.subarray(0, 47 * mib)), /the header \(line 0\)/],
    ];
    // A good header and two good rows, then text that is no device row: line 1,001 of it is one
    // skip too many, and the two good rows are not written either.
    const rows = '"devMac","devName"\r\n"02:00:00:aa:00:01","ok"\r\n"02:00:00:aa:00:02","ok"\r\n';
    const lines = Buffer.from(rows + 'not,a,device\r\n'.repeat(Math.floor((64 * mib - 2048) / 14)));
    garbage.push([multipart(lines), /more than 1000 lines are not devices; the first is line 3 \(3 fields/]);
    // Good rows, then a byte that is not UTF-8 on line 3.
    const badByte = Buffer.concat([
      Buffer.from(rows),
      Buffer.from('"02:00:00:aa:00:03","'),
      Buffer.from([0xff]),
    ]);
    garbage.push([jsonForm(Buffer.concat([badByte, randomBytes(32 * mib)])), /line 3 is not UTF-8 text/]);
    // A quote never closed: the row grows past 1 MiB.
    garbage.push([
      multipart(Buffer.from(`${rows}"02:00:00:aa:00:03","${'x'.repeat(60 * mib)}`)),
      /line 3 is longer/,
    ]);
    for (const [{ headers, body }, message] of garbage) {
      const res = await post(target, '/devices/import', { ...headers, ...auth(target) }, body);
      assert.deepEqual([res.status, res.json.code], [400, 'IMPORT_CSV_INVALID'], JSON.stringify(res.json));
      assert.match(String(res.json.message), message);
    }
    assert.equal(await exportCsv(target), before);
  });

  test('a body over IMPORT_BODY_LIMIT is a 413, declared or chunked, and changes nothing', async () => {
    const before = await exportCsv(target);
    // Good rows all the way (long comments, within a field's 16 KB): only the size is wrong.
    const comment = 'c'.repeat(15_000);
    const rows = Array.from(
      { length: 4_500 },
      (_, i) => `"02:00:01:00:${hex(i >> 8)}:${hex(i & 255)}","${comment}"`,
    );
    const { headers, body } = multipart(Buffer.from(`"devMac","devComments"\r\n${rows.join('\r\n')}\r\n`));
    assert.ok(body.length > 64 * mib);
    for (const chunked of [false, true]) {
      const res = await post(target, '/devices/import', { ...headers, ...auth(target) }, body, chunked);
      assert.equal(res.status, 413, JSON.stringify(res.json));
      assert.match(String(res.json.message), /limit of 67108864 bytes \(IMPORT_BODY_LIMIT\)/);
    }
    assert.equal(await exportCsv(target), before);
  });

  test('without a token, a 64 MiB body is refused before any of it is sent', async () => {
    // Only the headers go out: the answer must come without the server waiting for the body.
    const socket = connect(target.port, '127.0.0.1');
    const answer = new Promise<string>((resolve, reject) => {
      const parts: Buffer[] = [];
      socket.on('data', (part: Buffer) => parts.push(part));
      socket.on('end', () => {
        resolve(Buffer.concat(parts).toString('utf8'));
      });
      socket.on('error', reject);
    });
    socket.write(
      'POST /devices/import HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=x\r\n' +
        `Content-Length: ${64 * mib}\r\n\r\n--x\r\n`,
    );
    const text = await answer;
    socket.destroy();
    assert.match(text, /^HTTP\/1\.1 403 /);
    assert.match(text, /\r\nconnection: close\r\n/i);
  });
});
