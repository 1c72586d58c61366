import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { migrate, migrations } from '../../src/db/migrations.js';
import { addedColumnsDdl, storedFields } from '../../src/devices/catalogue.js';

test('a fresh database has exactly the catalogue columns, in order, at the latest version', () => {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-migrate-'));
  try {
    const db = openDatabase(join(dir, 'netkeep.db'));
    const columns = db.prepare<[], { name: string }>('PRAGMA table_info(Devices)').all();
    assert.deepEqual(
      columns.map((c) => c.name),
      storedFields.map((f) => f.name),
    );
    assert.equal(db.pragma('user_version', { simple: true }), migrations.length);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    db.close();
    // Opening again runs nothing.
    const again = new Database(join(dir, 'netkeep.db'));
    assert.equal(migrate(again), 0);
    again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a database from a newer netkeep is refused, not damaged', () => {
  const db = new Database(':memory:');
  db.pragma(`user_version = ${migrations.length + 1}`);
  assert.throws(() => migrate(db), /newer than this netkeep/);
  db.close();
});

test('no catalogue column belongs to a schema version without a migration', () => {
  for (const f of storedFields) assert.ok(f.since >= 1 && f.since <= migrations.length, f.name);
  assert.deepEqual(addedColumnsDdl(migrations.length + 1), []);
});
