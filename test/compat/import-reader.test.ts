/**
 * The readers of POST /devices/import, fed the same bytes whole and split at every byte: a row, a
 * multi-byte character, a doubled quote, a CRLF, a JSON escape or a multipart boundary cut by a
 * chunk's end reads the same as whole.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CsvError, CsvReader } from '../../src/compat/csv.js';
import { jsonBase64Content, multipartPart } from '../../src/compat/import-body.js';

function readCsv(chunks: Buffer[], maxRowChars = 1024): Array<[number, string[]]> {
  const rows: Array<[number, string[]]> = [];
  const reader = new CsvReader((fields, line) => rows.push([line, fields]), maxRowChars);
  for (const chunk of chunks) reader.push(chunk);
  reader.end();
  return rows;
}

const bytewise = (bytes: Buffer): Buffer[] => [...bytes].map((b) => Buffer.from([b]));

async function* source(chunks: Buffer[]): AsyncGenerator<Buffer> {
  for (const chunk of chunks) yield chunk;
  await Promise.resolve();
}

async function collect(stream: AsyncIterable<Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part);
  return Buffer.concat(parts).toString('utf8');
}

const csv = Buffer.from(
  '\uFEFF"devMac","devName"\r\n\r\n"aa:00:00:00:00:01","Küche ""Ost"", 🔌"\r\n' +
    'aa:00:00:00:00:02,"two\nlines"\n"aa:00:00:00:00:03",plain\r\n',
);
const rows: Array<[number, string[]]> = [
  [0, ['devMac', 'devName']],
  [1, ['aa:00:00:00:00:01', 'Küche "Ost", 🔌']],
  [2, ['aa:00:00:00:00:02', 'two\nlines']],
  [3, ['aa:00:00:00:00:03', 'plain']],
];

test('CSV: whole or one byte at a time, the same rows (BOM, blank line, quotes, CRLF, UTF-8)', () => {
  assert.deepEqual(readCsv([csv]), rows);
  assert.deepEqual(readCsv(bytewise(csv)), rows);
});

test('CSV: the first bad line is named, whole or split', () => {
  const bad: Array<[Buffer, RegExp]> = [
    [
      Buffer.concat([
        csv,
        Buffer.from('"aa:00:00:00:00:04","'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"\r\n'),
      ]),
      /^line 4 is not UTF-8 text$/,
    ],
    [Buffer.concat([csv, Buffer.from('"x",'), Buffer.from([0xe2, 0x82])]), /^line 4 is not UTF-8 text$/],
    [Buffer.concat([Buffer.from([0xff]), csv]), /^the header \(line 0\) is not UTF-8 text$/],
    [
      Buffer.concat([csv, Buffer.from('"aa:00:00:00:00:04","open\r\n')]),
      /^line 4 has a quoted field that is never closed$/,
    ],
    [Buffer.concat([csv, Buffer.from(`"${'x'.repeat(2000)}"`)]), /^line 4 is longer than 1024 characters/],
  ];
  for (const [bytes, message] of bad)
    for (const chunks of [[bytes], bytewise(bytes)])
      assert.throws(
        () => readCsv(chunks),
        (err: unknown) => err instanceof CsvError && message.test(err.message),
      );
});

test('JSON {content: base64}: escapes, wrapped lines and padding, whole or split', async () => {
  const base64 = csv.toString('base64');
  const wrapped = base64.replace(/.{76}/g, '$&\\n').replace(/\//g, '\\/');
  const body = Buffer.from(` { "content" : "${wrapped}" } `);
  assert.equal(await collect(jsonBase64Content(source([body]))), csv.toString('utf8'));
  assert.equal(await collect(jsonBase64Content(source(bytewise(body)))), csv.toString('utf8'));
  const refused: Array<[string, RegExp]> = [
    ['{"content":"YQ==","extra":1}', /unknown field 'extra'/],
    ['{"content":"YQ=a"}', /not base64/],
    ['{"content":"Y"}', /not base64/],
    ['{"content":1}', /must be a string/],
    ['{}', /The body is/],
    ['{"content":"YQ=="', /not valid JSON/],
    ['{"content":"YQ=="} x', /not valid JSON/],
  ];
  for (const [text, message] of refused)
    await assert.rejects(collect(jsonBase64Content(source(bytewise(Buffer.from(text))))), message);
});

test('multipart: the file part, whole or split, after another part', async () => {
  const boundary = 'b0undary';
  const body = Buffer.concat([
    Buffer.from(`preamble\r\n--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhi\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="d.csv"\r\n\r\n`),
    csv,
    Buffer.from(`\r\n--${boundary}--\r\nepilogue`),
  ]);
  const type = `multipart/form-data; boundary=${boundary}`;
  assert.equal(await collect(multipartPart(source([body]), type, 'file')), csv.toString('utf8'));
  assert.equal(await collect(multipartPart(source(bytewise(body)), type, 'file')), csv.toString('utf8'));
  await assert.rejects(collect(multipartPart(source([body]), type, 'other')), /no part named 'other'/);
  await assert.rejects(collect(multipartPart(source([body.subarray(0, 200)]), type, 'file')), /ends inside/);
});
