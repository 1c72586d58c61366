/**
 * The PostgreSQL schema against SQLite's: after all migrations of each, the same tables, columns
 * (name, type, NOT NULL, default), indexes and triggers; and the history-count triggers give the
 * same counts for the same rows, odd times included.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Database } from 'better-sqlite3';
import { openDatabase } from '../../../src/db/connection.js';
import { migrations } from '../../../src/store/sqlite/migrations.js';
import { migratePostgres, postgresMigrations } from '../../../src/store/postgres/migrations.js';
import { openPostgres, type PostgresPool } from '../../../src/store/postgres/pool.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL schema tests');

interface Column {
  readonly name: string;
  readonly type: 'TEXT' | 'INTEGER';
  readonly notNull: boolean;
  readonly default: string | null;
}

function sqliteSchema(db: Database): {
  tables: Map<string, Column[]>;
  indexes: string[];
  triggers: string[];
} {
  const names = (type: string): { name: string; tbl_name: string }[] =>
    db
      .prepare<[string], { name: string; tbl_name: string }>(
        // The change log (netkeep_change_log, its triggers netkeep_changes_*) is each store's own,
        // left out on both sides: PostgreSQL's names writing statements by transaction id for
        // other servers, SQLite's names rows by rowid for other processes on the same file, with
        // the last-connection-only marker SQLite's readers need. Neither is read by the other.
        `SELECT name, tbl_name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%'
           AND name NOT LIKE 'netkeep\\_%' ESCAPE '\\' AND tbl_name NOT LIKE 'netkeep\\_%' ESCAPE '\\' ORDER BY name`,
      )
      .all(type);
  const tables = new Map<string, Column[]>();
  for (const { name } of names('table')) {
    const columns = db
      .prepare<[], { name: string; type: string; notnull: number; dflt_value: string | null; pk: number }>(
        `PRAGMA table_info("${name}")`,
      )
      .all();
    tables.set(
      name,
      columns.map((c) => ({
        name: c.name,
        type: c.type === 'TEXT' ? 'TEXT' : 'INTEGER',
        // A PRIMARY KEY column is NOT NULL in both (SQLite's INTEGER PRIMARY KEY is the rowid).
        notNull: c.notnull === 1 || c.pk > 0,
        default: c.dflt_value,
      })),
    );
  }
  return {
    tables,
    indexes: names('index').map((i) => `${i.tbl_name}.${i.name}`),
    triggers: names('trigger').map((t) => `${t.tbl_name}.${t.name}`),
  };
}

async function postgresSchema(store: PostgresPool): Promise<{
  tables: Map<string, Column[]>;
  indexes: string[];
  triggers: string[];
  rowidTables: string[];
}> {
  const columns = await store.query<{
    table_name: string;
    column_name: string;
    data_type: string;
    is_nullable: string;
    column_default: string | null;
  }>(
    `SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name NOT LIKE 'netkeep\\_%' ORDER BY table_name, ordinal_position`,
  );
  const tables = new Map<string, Column[]>();
  const rowidTables: string[] = [];
  for (const c of columns) {
    if (c.column_name === 'rowid') {
      rowidTables.push(c.table_name);
      continue;
    }
    const list = tables.get(c.table_name) ?? [];
    const identity = c.column_default === null && c.data_type === 'bigint' && c.column_name === 'id';
    list.push({
      name: c.column_name,
      type: c.data_type === 'text' ? 'TEXT' : 'INTEGER',
      notNull: c.is_nullable === 'NO' || identity,
      // '[]'::text -> '[]'
      default: c.column_default === null ? null : c.column_default.replace(/::(text|bigint)$/, ''),
    });
    tables.set(c.table_name, list);
  }
  const indexes = await store.query<{ name: string }>(
    `SELECT tablename || '.' || indexname AS name FROM pg_indexes
     WHERE schemaname = 'public' AND tablename NOT LIKE 'netkeep\\_%' AND indexname !~ '_(pkey|key)$' ORDER BY indexname`,
  );
  // The change-tracking triggers (netkeep_changes_*) are PostgreSQL's own: SQLite's are TEMP
  // triggers each connection creates (device-sql.ts), not part of its schema.
  const triggers = await store.query<{ name: string }>(
    `SELECT DISTINCT event_object_table || '.' || trigger_name AS name FROM information_schema.triggers
     WHERE trigger_schema = 'public' AND trigger_name NOT LIKE 'netkeep\\_changes\\_%' ORDER BY 1`,
  );
  return {
    tables,
    indexes: indexes.map((i) => i.name),
    triggers: triggers.map((t) => t.name),
    rowidTables: rowidTables.sort(),
  };
}

describe('the PostgreSQL schema', { skip }, () => {
  let server: PostgresServer;
  let store: PostgresPool;
  let dir: string;
  let sqlite: Database;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    store = await openPostgres(server.url);
    dir = mkdtempSync(join(tmpdir(), 'netkeep-pg-schema-'));
    sqlite = openDatabase(join(dir, 'netkeep.db'));
  });
  after(async () => {
    sqlite.close();
    rmSync(dir, { recursive: true, force: true });
    await store.close();
    await server.stop();
  });

  test("has SQLite's tables, columns, indexes and triggers, by the same names", async () => {
    const lite = sqliteSchema(sqlite);
    const pg = await postgresSchema(store);
    assert.deepEqual([...pg.tables.keys()].sort(), [...lite.tables.keys()].sort());
    for (const [table, columns] of lite.tables) {
      assert.deepEqual(pg.tables.get(table), columns, `columns of ${table}`);
    }
    assert.deepEqual(pg.indexes.sort(), lite.indexes.sort());
    assert.deepEqual(pg.triggers.sort(), lite.triggers.sort());
    // SQLite's implicit rowid, which the lists of Events and Sessions page by, is a column here.
    assert.deepEqual(pg.rowidTables, ['Events', 'Sessions']);
  });

  test('the last PostgreSQL migration brings it to the last SQLite version', () => {
    assert.equal(postgresMigrations.at(-1)?.sqliteVersion, migrations.length);
  });

  test('migrating again changes nothing; servers migrating a new database together do it once', async () => {
    const client = await store.connect();
    try {
      assert.equal(await migratePostgres(client), 0);
    } finally {
      client.release();
    }
    const url = await server.createDatabase('together');
    const [a, b] = await Promise.all([openPostgres(url), openPostgres(url)]);
    try {
      const rows = await a.query<{ version: number }>(
        'SELECT version FROM netkeep_migrations ORDER BY version',
      );
      assert.deepEqual(
        rows.map((r) => r.version),
        postgresMigrations.map((_, i) => i + 1),
      );
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("netkeep_unixepoch reads times as SQLite's unixepoch() does", async () => {
    const texts = [
      '2024-01-01 10:00:00',
      '2024-01-01T10:00',
      '2024-01-01 10:00:00+02:00',
      '2024-01-01 10:00:00 -05:30',
      '2024-01-01 10:00:00Z',
      '2024-01-01',
      '2024-02-30 00:00:00',
      '2023-02-31 23:59:59',
      '2024-01-01 24:00:00',
      '2024-01-01 24:30:00',
      '2024-04-31 10:00:00',
      '1900-02-29 00:00:00',
      '0000-02-29 00:00:00',
      '2024-01-01 10:00:60',
      '2024-13-01 00:00:00',
      '2024-01-01 10:00:00.999',
      '2024-01-01 10:00:00 ',
      ' 2024-01-01 10:00:00',
      '1969-12-31 23:59:59',
      '0000-01-01 00:00:00',
      '2000-02-29 12:00:00',
      '2100-03-01 00:00:00',
      'garbage',
      '',
    ];
    for (const text of texts) {
      const lite =
        sqlite.prepare<[string], { t: number | null }>('SELECT unixepoch(?) AS t').get(text)?.t ?? null;
      const pg =
        (await store.query<{ t: number | null }>('SELECT netkeep_unixepoch($1) AS t', [text]))[0]?.t ?? null;
      assert.equal(pg, lite, `unixepoch('${text}')`);
      const liteCanonical =
        sqlite.prepare<[string, string], { c: number }>('SELECT datetime(?) IS ? AS c').get(text, text)?.c ===
        1;
      const pgCanonical = (
        await store.query<{ c: boolean }>('SELECT netkeep_canonical_time($1) AS c', [text])
      )[0]?.c;
      assert.equal(pgCanonical, liteCanonical, `datetime('${text}') IS '${text}'`);
    }
  });

  test('the history counts follow inserts, updates and deletes as SQLite counts them', async () => {
    const events: [string, string, string][] = [
      ['aa:00:00:00:00:01', '2024-01-01 10:00:00', 'New Device'],
      ['aa:00:00:00:00:01', '2024-01-01 11:00:00', 'Device Down'],
      ['aa:00:00:00:00:01', '2024-01-01 12:00:00', 'Connected'],
      ['aa:00:00:00:00:01', '2024-01-31T10:00:00', 'Device Down'],
      ['aa:00:00:00:00:02', '2024-02-30 10:00:00', 'IP Changed'],
      ['aa:00:00:00:00:02', '2024-03-01 10:00:00', 'Disconnected'],
    ];
    const sessions: [string, string | null, string | null, number][] = [
      ['aa:00:00:00:00:01', '2024-01-01 10:00:00', '2024-01-01 11:00:00', 0],
      ['aa:00:00:00:00:01', '2024-01-31 23:00:00', '2024-02-01 01:00:00', 0],
      ['aa:00:00:00:00:01', '2024-02-02 10:00:00', null, 1],
      ['aa:00:00:00:00:02', '2024-01-01 10:00:00', '', 0],
      ['aa:00:00:00:00:02', null, '2024-01-01 10:00:00', 0],
      ['aa:00:00:00:00:02', '2024-01-02 10:00:00', '2024-01-01 10:00:00', 0],
      ['aa:00:00:00:00:02', '2024-01-01T09:00:00', '2024-01-01 10:00:00+01:00', 0],
      ['aa:00:00:00:00:03', '2024-01-01 10:00:00', '2024-01-01 11:00:00', 1],
    ];
    const steps: string[] = [
      `UPDATE "Events" SET "eve_EventType" = 'Device Down' WHERE "eve_EventType" = 'Connected'`,
      `UPDATE "Events" SET "eve_DateTime" = '2024-01-05 10:00:00' WHERE "eve_DateTime" = '2024-01-31T10:00:00'`,
      `UPDATE "Sessions" SET "ses_DateTimeDisconnection" = '2024-02-02 12:00:00', "ses_StillConnected" = 0 WHERE "ses_StillConnected" = 1`,
      `UPDATE "Sessions" SET "ses_MAC" = 'aa:00:00:00:00:04' WHERE "ses_DateTimeConnection" IS NULL`,
      `UPDATE "Sessions" SET "ses_IP" = '10.0.0.1'`,
      `DELETE FROM "Events" WHERE "eve_EventType" = 'Device Down' AND "eve_MAC" = 'aa:00:00:00:00:01' AND "eve_DateTime" < '2024-01-02'`,
      `DELETE FROM "Sessions" WHERE "ses_DateTimeConnection" > '2024-01-15'`,
    ];
    const counts = async (): Promise<{ lite: unknown; pg: unknown }> => {
      const totals = 'SELECT * FROM "DeviceHistoryTotals" ORDER BY "mac"';
      const buckets = 'SELECT * FROM "DeviceHistoryBuckets" ORDER BY "mac", "span", "bucket"';
      return {
        lite: { totals: sqlite.prepare(totals).all(), buckets: sqlite.prepare(buckets).all() },
        pg: {
          totals: (await store.query(totals)).map((r) => ({ ...r })),
          buckets: (await store.query(buckets)).map((r) => ({ ...r })),
        },
      };
    };

    const insertEvent = `INSERT INTO "Events" ("eve_MAC", "eve_DateTime", "eve_EventType") VALUES`;
    const insertSession = `INSERT INTO "Sessions" ("ses_MAC", "ses_DateTimeConnection", "ses_DateTimeDisconnection", "ses_StillConnected") VALUES`;
    // One statement each for PostgreSQL (the statement triggers see the whole batch), row by row
    // for SQLite (its row triggers).
    for (const e of events) sqlite.prepare(`${insertEvent} (?, ?, ?)`).run(...e);
    for (const s of sessions) sqlite.prepare(`${insertSession} (?, ?, ?, ?)`).run(...s);
    await store.query(
      `${insertEvent} ${events.map((_, i) => `($${3 * i + 1}, $${3 * i + 2}, $${3 * i + 3})`).join(', ')}`,
      events.flat(),
    );
    await store.query(
      `${insertSession} ${sessions.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4})`).join(', ')}`,
      sessions.flat(),
    );
    let now = await counts();
    assert.deepEqual(now.pg, now.lite, 'after the inserts');
    assert.ok((now.lite as { totals: unknown[] }).totals.length >= 3, 'the rows were counted');
    for (const step of steps) {
      sqlite.exec(step);
      await store.query(step);
      now = await counts();
      assert.deepEqual(now.pg, now.lite, `after ${step}`);
    }
  });
});
