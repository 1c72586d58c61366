/**
 * Stored JSON (devCustomProps) is bounded in depth and size at write time, with a 400 naming the
 * field and the bound; and a value already stored deeper (written by another program: the sqlite3
 * CLI, or another connection to PostgreSQL) never makes a read fail. Over HTTP on both stores
 * (test/helpers/stores.ts). Before, a devCustomProps nested 4,109 levels deep was
 * accepted and every later read of the device answered 500 (stack overflow in JSON.stringify).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { maxJsonChars, maxJsonDepth, parseStoredJson, textDepth, valueDepth } from '../../src/json-bounds.js';
import type { InProcessServer } from '../helpers/inject.js';
import { openTables } from '../helpers/store-tables.js';
import { onEachStore } from '../helpers/stores.js';

/** JSON text of devCustomProps nested `levels` deep: [{"a":[{"a":[...]}]}]. */
function nested(levels: number): string {
  let text = '{}';
  let depth = 2; // with the outer array
  for (; depth + 2 <= levels; depth += 2) text = `{"a":[${text}]}`;
  if (depth < levels) text = `{"b":${text}}`;
  return `[${text}]`;
}

describe('JSON depth and size bounds (unit)', () => {
  test('textDepth counts brackets outside strings only, escapes included', () => {
    assert.equal(textDepth('[]'), 1);
    assert.equal(textDepth('[{"a":[1]}]'), 3);
    assert.equal(textDepth('[{"a":"[[[[\\"[[["}]'), 2);
    assert.equal(textDepth(nested(4109)), 4109);
  });
  test('valueDepth walks without recursion and stops past the limit', () => {
    assert.equal(valueDepth([]), 1);
    assert.equal(valueDepth([{ a: [1, { b: 2 }] }]), 4);
    assert.ok(valueDepth(JSON.parse(nested(100_001))) > maxJsonDepth);
  });
  test('parseStoredJson: too deep, too long or not JSON stays readable', () => {
    assert.deepEqual(parseStoredJson('[{"a":1}]'), [{ a: 1 }]);
    assert.deepEqual(parseStoredJson('not json'), [{ unreadable: 'not json' }]);
    const deep = nested(maxJsonDepth + 1);
    assert.deepEqual(parseStoredJson(deep), [{ unreadable: deep }]);
    const long = `[{"a":"${'x'.repeat(maxJsonChars)}"}]`;
    assert.deepEqual(parseStoredJson(long), [{ unreadable: long.slice(0, maxJsonChars) }]);
  });
});

onEachStore('devCustomProps bounds over HTTP', (store, start) => {
  let server: InProcessServer;
  const mac = '02:de:ee:00:00:01';
  before(async () => {
    server = await start();
    const res = await server.request('POST', `/device/${mac}`, { body: { createNew: true } });
    assert.equal(res.status, 200, res.text);
  });
  after(async () => {
    await server.stop();
  });

  test(`a value nested ${maxJsonDepth} levels is stored; deeper ones are a 400 naming the field`, async () => {
    const ok = await server.request('POST', `/device/${mac}`, {
      rawBody: `{"devCustomProps":${nested(maxJsonDepth)}}`,
    });
    assert.equal(ok.status, 200, ok.text);
    for (const levels of [maxJsonDepth + 1, 4109]) {
      for (const [path, body] of [
        [`/device/${mac}`, `{"devCustomProps":${nested(levels)}}`],
        [`/device/${mac}/update-column`, `{"columnName":"devCustomProps","columnValue":${nested(levels)}}`],
      ] as const) {
        const res = await server.request('POST', path, { rawBody: body });
        assert.equal(res.status, 400, `${path} ${levels}: ${res.text}`);
        assert.match(String(res.json.message), /devCustomProps/);
        assert.match(String(res.json.message), new RegExp(`at most ${maxJsonDepth} levels`));
      }
    }
    // The stored value is still the accepted one.
    const device = await server.request('GET', `/device/${mac}`);
    assert.equal(device.status, 200);
    assert.equal(valueDepth(device.json.devCustomProps), maxJsonDepth);
  });

  test('the CSV import (POST /devices/import) refuses a value nested too deep, plain or base64', async () => {
    const deep = nested(4109);
    const cell = (text: string): string => `"${text.replace(/"/g, '""')}"`;
    const rows = [
      ['02:de:ee:00:00:02', deep],
      ['02:de:ee:00:00:03', Buffer.from(deep).toString('base64')],
    ];
    const csv = `devMac,devName,devCustomProps\n${rows.map(([m, v]) => `${m},x,${cell(v ?? '')}`).join('\n')}\n`;
    const res = await server.request('POST', '/devices/import', {
      body: { content: Buffer.from(csv).toString('base64') },
    });
    assert.equal(res.status, 200, res.text.slice(0, 300));
    const notes = (res.json.notes as { line: number; note: string }[]).map((n) => [n.line, n.note]);
    assert.equal(notes.length, 2, JSON.stringify(notes));
    for (const [, note] of notes)
      assert.match(
        String(note),
        new RegExp(`^devCustomProps .* refused \\(.*at most ${maxJsonDepth} allowed`),
      );
    for (const [m] of rows) {
      const device = await server.request('GET', `/device/${m}`);
      assert.equal(device.status, 200);
      assert.deepEqual(device.json.devCustomProps, [], `${m} kept the default`);
    }
  });

  test('a value stored 4,109 levels deep by another program reads as 200 everywhere', async () => {
    const deep = nested(4109);
    const db = await openTables(server);
    try {
      if (store === 'SQLite')
        execFileSync('sqlite3', [
          join(server.dataDir, 'netkeep.db'),
          `UPDATE Devices SET devCustomProps = '${deep}' WHERE devMac = '${mac}'`,
        ]);
      else await db.run('UPDATE "Devices" SET "devCustomProps" = ? WHERE "devMac" = ?', [deep, mac]);
      // Seen by the server (at once on SQLite; through NOTIFY on PostgreSQL).
      await db.until(async () => {
        const res = await server.request('GET', `/device/${mac}`);
        return JSON.stringify(res.json.devCustomProps) === JSON.stringify([{ unreadable: deep }]);
      }, 'the value written by another program');
    } finally {
      await db.close();
    }
    for (const path of [`/device/${mac}`, `/device/${mac}?period=1%20day`, '/devices', '/devices?limit=10']) {
      const res = await server.request('GET', path);
      assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 200)}`);
      const device = (
        path.startsWith('/devices') ? (res.json.devices as Record<string, unknown>[])[0] : res.json
      ) as {
        devCustomProps: unknown;
      };
      assert.deepEqual(device.devCustomProps, [{ unreadable: deep }], path);
    }
    // And it can be repaired through the API.
    assert.equal((await server.request('POST', `/device/${mac}/reset-props`)).status, 200);
    assert.deepEqual((await server.request('GET', `/device/${mac}`)).json.devCustomProps, []);
  });
});
