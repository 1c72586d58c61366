import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { migrate, migrations } from '../../src/store/sqlite/migrations.js';
import { columnDefinition, storedFields } from '../../src/devices/catalogue.js';

function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-migrate-'));
  return {
    dir,
    remove: () => {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** SQL text with whitespace runs collapsed, so indentation in a migration does not matter. */
function normalise(sql: string | null): string | null {
  return sql === null ? null : sql.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')').trim();
}

/** Everything that makes up a schema: objects with their SQL, columns, indexes and index columns. */
function schemaOf(db: Database.Database): unknown {
  const objects = db
    .prepare<[], { type: string; name: string; tbl_name: string; sql: string | null }>(
      "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
    )
    .all();
  return objects.map((o) => ({
    ...o,
    sql: normalise(o.sql),
    columns: o.type === 'table' ? db.prepare(`PRAGMA table_xinfo("${o.name}")`).all() : undefined,
    indexes: o.type === 'table' ? db.prepare(`PRAGMA index_list("${o.name}")`).all() : undefined,
    indexColumns: o.type === 'index' ? db.prepare(`PRAGMA index_xinfo("${o.name}")`).all() : undefined,
  }));
}

test('a fresh database has exactly the catalogue columns, in order, at the latest version', () => {
  const { dir, remove } = tempDir();
  try {
    const db = openDatabase(join(dir, 'netkeep.db'));
    const columns = db
      .prepare<[], { name: string; type: string; notnull: number; dflt_value: string | null; pk: number }>(
        'PRAGMA table_info(Devices)',
      )
      .all();
    assert.deepEqual(
      columns.map((c) => c.name),
      storedFields.map((f) => f.name),
    );
    // Each column has the type, NOT NULL and default its kind calls for.
    const sql = normalise(
      db.prepare<[], { sql: string }>("SELECT sql FROM sqlite_master WHERE name = 'Devices'").get()?.sql ??
        '',
    );
    for (const f of storedFields)
      assert.ok(sql?.includes(columnDefinition(f)), `${f.name}: ${columnDefinition(f)}`);
    assert.equal(db.pragma('user_version', { simple: true }), migrations.length);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    db.close();
    // Opening again runs nothing.
    const again = new Database(join(dir, 'netkeep.db'));
    assert.equal(migrate(again), 0);
    again.close();
  } finally {
    remove();
  }
});

test('a database created at migration 1, with data, upgrades to the same schema as a fresh one', () => {
  const { dir, remove } = tempDir();
  try {
    // A database as the first release left it: migration 1 only, with rows in every table.
    const old = new Database(join(dir, 'old.db'));
    const first = migrations[0];
    assert.ok(first);
    old.transaction(() => {
      first.up(old);
      old.pragma('user_version = 1');
    })();
    old.exec(`
      INSERT INTO Devices (devMac, devName, devLastIP, devFirstConnection, devPresentLastScan)
        VALUES ('02:00:00:00:00:01', 'nas', '192.168.1.10', '2024-01-01 10:00:00', 1),
               ('02:00:00:00:00:02', 'printer', '192.168.1.11', '2024-01-02 10:00:00', 0);
      INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType)
        VALUES ('02:00:00:00:00:01', '192.168.1.10', '2024-01-01 10:00:00', 'New Device');
      INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection, ses_StillConnected)
        VALUES ('02:00:00:00:00:01', '192.168.1.10', 'New Device', '2024-01-01 10:00:00', 1);
    `);
    assert.equal(migrate(old), migrations.length - 1);
    assert.equal(old.pragma('user_version', { simple: true }), migrations.length);

    const fresh = openDatabase(join(dir, 'fresh.db'));
    assert.deepEqual(schemaOf(old), schemaOf(fresh));
    // The rows came through.
    const count = (table: string): number =>
      old.prepare<[], { n: number }>(`SELECT count(*) AS n FROM ${table}`).get()?.n ?? -1;
    assert.deepEqual([count('Devices'), count('Events'), count('Sessions')], [2, 1, 1]);
    assert.deepEqual(old.pragma('foreign_key_check'), []);
    assert.equal(old.pragma('integrity_check', { simple: true }), 'ok');
    old.close();
    fresh.close();
  } finally {
    remove();
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
