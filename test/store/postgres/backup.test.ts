/**
 * Backup and restore on PostgreSQL (DESIGN 18): GET /backup's snapshot of a PostgreSQL store is a
 * SQLite file holding the same rows as the store, and `npm run restore -- --database-url <url>`
 * (the real script, a child process) puts it into a new empty PostgreSQL database: every table's
 * rows and the history counts identical to the store it came from. A backup taken while another
 * connection writes is one snapshot: each write is in it whole or not at all, and it restores to
 * a consistent store. A database that is not empty is refused, changing nothing.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import {
  copiedTables,
  copyPostgresToSqlite,
  copySqliteToPostgres,
} from '../../../src/store/postgres/copy.js';
import { PostgresBackupStore } from '../../../src/store/postgres/backup.js';
import { openPostgres, type PostgresPool } from '../../../src/store/postgres/pool.js';
import { inspectBackup } from '../../../src/store/sqlite/backup.js';
import { newDeviceRow } from '../../../src/store/sqlite/rows.js';
import { importDatabase } from '../../../src/store/sqlite/import/importer.js';
import { netAlertXCopy } from '../../import/fixtures.js';
import { fillStore } from '../../helpers/filled-store.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';
import { runCli, type CliRun } from '../../helpers/cli.js';

const skip = skipUnlessCi(postgresMissing(), 'backup and restore on PostgreSQL');
const restoreScript = fileURLToPath(new URL('../../../../scripts/restore.mjs', import.meta.url));

type Row = Record<string, unknown>;

/** Every table a backup carries, and the counts derived from them, each in its key's order. */
const tables: [string, string][] = [
  ...copiedTables.map(({ table, key }): [string, string] => [table, key.map((k) => `"${k}"`).join(', ')]),
  ['DeviceHistoryTotals', '"mac"'],
  ['DeviceHistoryBuckets', '"mac", "span", "bucket"'],
];

const rowidTables = new Set<string>(copiedTables.filter((t) => t.rowid).map((t) => t.table));

function sqliteDump(file: string): Row {
  const db = new Database(file, { readonly: true });
  try {
    const dump: Row = {};
    for (const [table, order] of tables)
      dump[table] = db
        .prepare<[], Row>(
          `SELECT ${rowidTables.has(table) ? 'rowid AS "rowid", ' : ''}* FROM "${table}" ORDER BY ${order}`,
        )
        .all();
    return dump;
  } finally {
    db.close();
  }
}

async function postgresDump(store: PostgresPool): Promise<Row> {
  const dump: Row = {};
  for (const [table, order] of tables)
    dump[table] = (await store.query<Row>(`SELECT * FROM "${table}" ORDER BY ${order}`)).map((r) => ({
      ...r,
    }));
  return dump;
}

/** `npm run restore -- --database-url <url> <file>` as a person runs it (scripts/restore.mjs). */
function restore(cwd: string, url: string, file: string): Promise<CliRun> {
  return runCli(restoreScript, cwd, ['--database-url', url, file]);
}

describe('backup and restore on PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  let store: PostgresPool;
  let dir: string;
  let source: string;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    dir = mkdtempSync(join(tmpdir(), 'netkeep-pg-backup-'));
    source = join(dir, 'source.db');
    importDatabase({ source: netAlertXCopy(), target: source });
    fillStore(source);
    store = await openPostgres(server.url);
    const sqlite = new Database(source, { readonly: true });
    try {
      const report = await copySqliteToPostgres(sqlite, store, { sourceId: source });
      assert.deepEqual(report.countMismatches, []);
    } finally {
      sqlite.close();
    }
  });
  after(async () => {
    await store.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a round trip: SQLite → PostgreSQL → backup file → a new empty PostgreSQL, every row the same', async () => {
    const file = join(dir, 'netkeep-backup.db');
    await new PostgresBackupStore(store).snapshot(file);

    // The file: an intact netkeep database at this netkeep's schema, with every row of the store.
    const contents = inspectBackup(file);
    const original = await postgresDump(store);
    assert.deepEqual(sqliteDump(file), original);
    const counts = original as Record<string, Row[]>;
    assert.equal(contents.events, counts.Events?.length);
    assert.ok(contents.events > 1000 && counts.Probes?.length === 1, 'the store was full');
    // The copied tables as the SQLite store they came from had them.
    const fromSource = sqliteDump(source) as Record<string, Row[]>;
    for (const { table } of copiedTables) assert.deepEqual(counts[table], fromSource[table], table);

    const url = await server.createDatabase('restored');
    const run = await restore(dir, url, file);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      new RegExp(
        `^restored ${file} \\(schema ${contents.schemaVersion}\\) into PostgreSQL at 127\\.0\\.0\\.1:${server.port}/restored: ${contents.devices} devices, ${contents.events} events, ${contents.sessions} sessions\n`,
      ),
    );
    assert.match(run.stdout, /history counts: the same as the SQLite store/);
    assert.ok(!(run.stdout + run.stderr).includes(server.password), 'the password is printed nowhere');
    const restored = await openPostgres(url);
    try {
      assert.deepEqual(await postgresDump(restored), original);
      // Rows written after the restore continue after the restored keys.
      const [next] = await restored.query<{ rowid: number }>(
        `INSERT INTO "Events" ("eve_MAC", "eve_DateTime", "eve_EventType") VALUES ('x', '2024-06-01 00:00:00', 'New Device') RETURNING "rowid"`,
      );
      const last = counts.Events?.at(-1)?.rowid;
      assert.ok(Number(next?.rowid) > Number(last));
    } finally {
      await restored.close();
    }

    // A database that holds netkeep data is refused, and left as it was.
    const before = await postgresDump(store);
    const refused = await restore(dir, server.url, file);
    assert.equal(refused.code, 2, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /refused, nothing was changed: .*holds a copy of another SQLite store/);
    assert.deepEqual(await postgresDump(store), before);
  });

  test('a backup taken while writes go on is one snapshot, and restores to a consistent store', async () => {
    // Each write: a device, its event and its session, and a counter of writes, in one transaction.
    const writer = await openPostgres(server.url);
    let written = 0;
    const control = { stop: false };
    const waiters: (() => void)[] = [];
    const writing = (async () => {
      while (!control.stop) {
        const n = written + 1;
        const mac = `02:cc:00:00:${(n >> 8).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`;
        await writer.transaction(async (c) => {
          await c.query(
            `INSERT INTO "Devices" SELECT * FROM json_populate_record(NULL::"Devices", $1::json)`,
            [JSON.stringify(newDeviceRow(mac, { devName: `load ${n}` }))],
          );
          await c.query(
            `INSERT INTO "Events" ("eve_MAC", "eve_DateTime", "eve_EventType") VALUES ($1, '2026-05-01 09:00:00', 'Device Down')`,
            [mac],
          );
          await c.query(
            `INSERT INTO "Sessions" ("ses_MAC", "ses_DateTimeConnection", "ses_StillConnected") VALUES ($1, '2026-05-01 09:00:00', 1)`,
            [mac],
          );
          await c.query(
            `INSERT INTO "WatchMemory" VALUES ('load', 'writes', $1)
             ON CONFLICT ("wat_Kind", "wat_Key") DO UPDATE SET "wat_Value" = excluded."wat_Value"`,
            [String(n)],
          );
        });
        written = n;
        for (const wake of waiters.splice(0)) wake();
      }
    })();
    const moreWrites = async (count: number): Promise<void> => {
      const target = written + count;
      while (written < target) await new Promise<void>((resolve) => waiters.push(resolve));
    };

    const file = join(dir, 'under-load.db');
    let waited = false;
    try {
      await moreWrites(3);
      await copyPostgresToSqlite(store, file, {
        batchSize: 100,
        // Half way through the history, the writer commits more: the snapshot must not see them.
        onProgress: async ({ table, done }) => {
          if (waited || table !== 'Events' || done < 500) return;
          waited = true;
          await moreWrites(5);
        },
      });
    } finally {
      control.stop = true;
      await writing;
      await writer.close();
    }
    assert.ok(waited, 'the writes went on during the copy');

    const consistent = (dump: Record<string, Row[]>) => {
      const load = (rows: Row[] | undefined, column: string) =>
        (rows ?? []).filter((r) => String(r[column]).startsWith('02:cc:')).length;
      const counter = Number(dump.WatchMemory?.find((r) => r.wat_Kind === 'load')?.wat_Value);
      assert.ok(counter >= 3);
      assert.equal(load(dump.Devices, 'devMac'), counter, 'devices');
      assert.equal(load(dump.Events, 'eve_MAC'), counter, 'events');
      assert.equal(load(dump.Sessions, 'ses_MAC'), counter, 'sessions');
      assert.equal(load(dump.DeviceHistoryTotals, 'mac'), counter, 'history counts');
      return counter;
    };
    const backup = sqliteDump(file) as Record<string, Row[]>;
    const inBackup = consistent(backup);
    assert.ok(inBackup < written, 'the writes committed during the copy are not in it');

    const url = await server.createDatabase('underload');
    const run = await restore(dir, url, file);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /history counts: the same as the SQLite store/);
    const restored = await openPostgres(url);
    try {
      const dump = (await postgresDump(restored)) as Record<string, Row[]>;
      assert.equal(consistent(dump), inBackup);
      assert.deepEqual(dump, backup);
    } finally {
      await restored.close();
    }
  });

  test('bad arguments and a file that is no backup: exit 2 with the reason, nothing written, no password', async () => {
    const before = await postgresDump(store);
    const notABackup = join(dir, 'not-a-backup.db');
    writeFileSync(notABackup, 'hello');
    const url = `${server.url}?application_name=x`;
    for (const [args, expected] of [
      [['--database-url'], /--database-url needs a URL/],
      [['--database-url', server.url], /no backup file given/],
      [['--bogus', 'file.db'], /unknown option '--bogus'/],
      [['--database-url', url, join(dir, 'netkeep-backup.db')], /only sslmode is read/],
      [['--database-url', server.url, notABackup], /is not a SQLite database; nothing was changed/],
    ] as const) {
      const run = await runCli(restoreScript, dir, args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, expected);
      assert.ok(!(run.stdout + run.stderr).includes(server.password), 'the password is printed nowhere');
    }
    assert.deepEqual(await postgresDump(store), before);
  });

  test('a database a newer netkeep migrated is refused, and no file is left', async () => {
    const url = await server.createDatabase('newer');
    const newer = await openPostgres(url);
    try {
      await newer.query(
        `INSERT INTO netkeep_migrations (version, description) VALUES ((SELECT max(version) + 1 FROM netkeep_migrations), 'from a newer netkeep')`,
      );
      const file = join(dir, 'from-newer.db');
      await assert.rejects(new PostgresBackupStore(newer).snapshot(file), { code: 'STORE_VERSION_MISMATCH' });
      assert.ok(!existsSync(file));
    } finally {
      await newer.close();
    }
  });
});
