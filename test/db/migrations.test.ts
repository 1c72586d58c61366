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

test('the outbox migration keeps devSkipRepeated values and widens its CHECK to 0-8760 hours', () => {
  const db = new Database(':memory:');
  const index = migrations.findIndex((m) => m.description.startsWith('Notifications'));
  assert.ok(index > 0);
  for (const migration of migrations.slice(0, index)) migration.up(db);
  // The Devices table as released before: devSkipRepeated a 0/1 flag.
  db.unsafeMode(true);
  db.pragma('writable_schema = ON');
  db.prepare(
    `UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (devSkipRepeated BETWEEN 0 AND 8760)', 'CHECK (devSkipRepeated IN (0, 1))')
     WHERE type = 'table' AND name = 'Devices'`,
  ).run();
  db.pragma(`schema_version = ${(db.pragma('schema_version', { simple: true }) as number) + 1}`);
  db.pragma('writable_schema = OFF');
  db.unsafeMode(false);
  db.pragma(`user_version = ${index}`);
  db.prepare("INSERT INTO Devices (devMac, devSkipRepeated) VALUES ('02:00:00:00:00:01', 1)").run();
  assert.throws(() => db.prepare('UPDATE Devices SET devSkipRepeated = 24').run(), /CHECK constraint/);

  migrate(db);
  const sql = (db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'Devices'").get() as { sql: string })
    .sql;
  assert.match(sql, /CHECK \(devSkipRepeated BETWEEN 0 AND 8760\)/);
  assert.equal((db.prepare('SELECT devSkipRepeated AS v FROM Devices').get() as { v: number }).v, 1);
  db.prepare('UPDATE Devices SET devSkipRepeated = 24').run();
  assert.throws(() => db.prepare('UPDATE Devices SET devSkipRepeated = 8761').run(), /CHECK constraint/);
  assert.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
  db.close();
});
