import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { computedFields, storedFields } from '../../src/devices/catalogue.js';

const doc = readFileSync(new URL('../../../docs/api/devices.md', import.meta.url), 'utf8');

/** Table rows of the doc as trimmed cells. */
const rows = doc
  .split('\n')
  .filter((line) => line.startsWith('|'))
  .map((line) =>
    line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );

test('docs/api/devices.md lists every catalogue field with its type, default and editability', () => {
  for (const f of storedFields) {
    const row = rows.find((cells) => cells[0] === `\`${f.name}\``);
    assert.ok(row, `${f.name} has a row`);
    assert.deepEqual(
      row.slice(1, 4),
      [f.kind, `\`${JSON.stringify(f.default)}\``, f.editable ? 'yes' : 'no'],
      f.name,
    );
  }
  for (const name of Object.keys(computedFields)) {
    const row = rows.find((cells) => cells[0] === `\`${name}\``);
    assert.ok(row, `${name} has a row`);
    assert.equal(row[1], 'computed');
  }
});

test('docs/api/devices.md documents every device endpoint with a curl example', () => {
  for (const heading of [
    '### GET /device/\\<mac\\>',
    '### GET /device/new',
    '### POST /device/\\<mac\\>',
    '### DELETE /device/\\<mac\\>/delete',
    '### DELETE /device/\\<mac\\>/events/delete',
    '### POST /device/\\<mac\\>/reset-props',
    '### POST /device/copy',
    '### POST /device/\\<mac\\>/update-column',
    '### GET /devices',
    '### GET /devices/map',
    '### GET /device/\\<mac\\>/events',
    '### GET /device/\\<mac\\>/sessions',
  ]) {
    const start = doc.indexOf(heading);
    assert.ok(start >= 0, heading);
    const section = doc.slice(start, doc.indexOf('\n### ', start + 1) >>> 0);
    assert.match(section, /curl /, `${heading} has a curl example`);
  }
});
