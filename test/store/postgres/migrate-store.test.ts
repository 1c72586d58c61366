/**
 * `npm run migrate-store` (the compiled CLI, run as a child process): a real SQLite store, made by
 * importing the shared NetAlertX fixture and filled in every copied table, goes into a real
 * PostgreSQL in batches, with progress; the rows and counts match; a second run changes nothing;
 * a half-finished copy is finished; a foreign or non-empty database is refused untouched. The
 * password is in none of the output.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { importDatabase } from '../../../src/store/sqlite/import/importer.js';
import { openPostgres, type PostgresPool } from '../../../src/store/postgres/pool.js';
import { copiedTables } from '../../../src/store/postgres/copy.js';
import { netAlertXCopy } from '../../import/fixtures.js';
import { runCli, type CliRun } from '../../helpers/cli.js';
import { fillStore } from '../../helpers/filled-store.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'migrate-store tests');
const cli = fileURLToPath(new URL('../../../src/store/postgres/migrate-cli.js', import.meta.url));

/** `npm run migrate-store` in a directory without a .env, with only the variables the CLI reads. */
function migrateStore(dataDir: string, args: readonly string[]): Promise<CliRun> {
  return runCli(cli, dataDir, args);
}

type Row = Record<string, unknown>;

function sqliteRows(path: string, sql: string): Row[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare<[], Row>(sql).all();
  } finally {
    db.close();
  }
}

async function pgRows(store: PostgresPool, sql: string): Promise<Row[]> {
  return (await store.query<Row>(sql)).map((r) => ({ ...r }));
}

describe('npm run migrate-store', { skip }, () => {
  let server: PostgresServer;
  let dataDir: string;
  let storePath: string;
  let store: PostgresPool;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    dataDir = mkdtempSync(join(tmpdir(), 'netkeep-migrate-store-'));
    mkdirSync(dataDir, { recursive: true });
    storePath = join(dataDir, 'netkeep.db');
    importDatabase({ source: netAlertXCopy(), target: storePath });
    fillStore(storePath);
    store = await openPostgres(server.url);
  });
  after(async () => {
    await store.close();
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const tableCounts = async (): Promise<{ lite: Row; pg: Row }> => {
    const lite: Row = {};
    const pg: Row = {};
    for (const { table } of [
      ...copiedTables,
      { table: 'DeviceHistoryTotals' },
      { table: 'DeviceHistoryBuckets' },
    ]) {
      const sql = `SELECT count(*) AS n FROM "${table}"`;
      lite[table] = Number(sqliteRows(storePath, sql)[0]?.n);
      pg[table] = Number((await pgRows(store, sql))[0]?.n);
    }
    return { lite, pg };
  };

  test('copies every table in batches with progress; rows and counts match; the password is printed nowhere', async () => {
    const run = await migrateStore(dataDir, ['--batch', '100', server.url]);
    assert.equal(run.code, 0, run.stderr);
    const output = run.stdout + run.stderr;
    assert.ok(!output.includes(server.password), 'the password is not printed');
    assert.match(run.stderr, /migrate-store: Events 100\/\d+\n/);
    assert.match(
      run.stderr,
      /migrate-store: Events (\d+)\/\1\n/,
      'the last batch of Events reaches the total',
    );
    assert.match(run.stdout, /history counts: the same as the SQLite store/);
    assert.match(run.stdout, new RegExp(`into PostgreSQL at 127\\.0\\.0\\.1:${server.port}/netkeep`));

    const { lite, pg } = await tableCounts();
    assert.deepEqual(pg, lite);
    assert.ok((lite.Events as number) > 1000 && (lite.Notifications as number) === 1, 'the store was full');

    // Every device, alias, port, memory, outbox and probe row as it is (a token hash's bytes too); a sample of the history by rowid.
    for (const [table, order] of [
      ['Devices', '"devMac"'],
      ['DeviceMacs', '"dma_MAC"'],
      ['ScanState', '"mac"'],
      ['DevicePorts', '"dpo_MAC", "dpo_Port"'],
      ['WatchMemory', '"wat_Kind", "wat_Key"'],
      ['NotificationPayloads', '"id"'],
      ['Notifications', '"id"'],
      ['Probes', '"prb_Id"'],
      ['ProbeCycles', '"pcy_ProbeId", "pcy_CycleId"'],
      ['DeviceHistoryTotals', '"mac"'],
    ] as const) {
      const sql = `SELECT * FROM "${table}" ORDER BY ${order}`;
      assert.deepEqual(await pgRows(store, sql), sqliteRows(storePath, sql), table);
    }
    for (const table of ['Events', 'Sessions']) {
      const sql = `SELECT rowid AS "rowid", * FROM "${table}" WHERE rowid % 50 = 7 OR rowid < 5 ORDER BY rowid`;
      const sample = sqliteRows(storePath, sql);
      assert.ok(sample.length > 10);
      assert.deepEqual(await pgRows(store, sql.replace('rowid AS "rowid", *', '*')), sample, table);
    }

    // New rows continue after the copied keys.
    const [next] = await pgRows(
      store,
      `INSERT INTO "Events" ("eve_MAC", "eve_DateTime", "eve_EventType") VALUES ('x', '2024-06-01 00:00:00', 'New Device') RETURNING "rowid"`,
    );
    const [max] = sqliteRows(storePath, 'SELECT max(rowid) AS m FROM Events');
    assert.ok(Number(next?.rowid) > Number(max?.m));
    // Leave the copy as it was (the counts' rows of zeros too).
    await store.query(`DELETE FROM "Events" WHERE "eve_MAC" = 'x'`);
    await store.query(`DELETE FROM "DeviceHistoryTotals" WHERE "mac" = 'x'`);
    await store.query(`DELETE FROM "DeviceHistoryBuckets" WHERE "mac" = 'x'`);
  });

  test('a second run changes nothing; a half-finished copy is finished', async () => {
    const before = await tableCounts();
    const again = await migrateStore(dataDir, [server.url]);
    assert.equal(again.code, 0, again.stderr);
    for (const line of again.stdout.split('\n').filter((l) => / read \d+:/.test(l))) {
      assert.match(line, /added 0, already there \d+/, line);
    }
    assert.deepEqual(await tableCounts(), before);

    // A copy that stopped after part of the history.
    await store.query('DELETE FROM "Events" WHERE "rowid" > 600');
    await store.query('DELETE FROM "Sessions" WHERE "rowid" > 300');
    const finish = await migrateStore(dataDir, ['--batch', '250', server.url]);
    assert.equal(finish.code, 0, finish.stderr);
    assert.match(finish.stdout, /Events +read \d+: added [1-9]\d*/);
    assert.deepEqual(await tableCounts(), before);
    const totals = 'SELECT * FROM "DeviceHistoryTotals" ORDER BY "mac"';
    assert.deepEqual(await pgRows(store, totals), sqliteRows(storePath, totals));
  });

  test('refuses a database with tables netkeep does not own, or netkeep data from elsewhere, writing nothing', async () => {
    const foreignUrl = await server.createDatabase('foreign_app');
    const foreign = await openPostgres(foreignUrl).catch((err: unknown) => {
      throw err;
    });
    // openPostgres migrated it; make it someone else's database instead.
    await foreign.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public; CREATE TABLE invoices (id int)');
    const refused = await migrateStore(dataDir, [foreignUrl]);
    assert.equal(refused.code, 2);
    assert.match(
      refused.stderr,
      /refused, nothing was copied: .*holds tables netkeep does not own \(public\.invoices\)/,
    );
    const tables = await foreign.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'",
    );
    assert.equal(tables[0]?.n, 1, 'nothing was created');
    await foreign.close();

    const otherUrl = await server.createDatabase('other_netkeep');
    const other = await openPostgres(otherUrl);
    await other.query(`INSERT INTO "Devices" ("devMac", "devName") VALUES ('aa:aa:aa:aa:aa:aa', 'mine')`);
    const refusedToo = await migrateStore(dataDir, [otherUrl]);
    assert.equal(refusedToo.code, 2);
    assert.match(
      refusedToo.stderr,
      /already holds netkeep data \(1 Devices\) that was not copied by migrate-store/,
    );
    assert.ok(!(refusedToo.stdout + refusedToo.stderr).includes(server.password));
    const devices = await other.query<{ n: number }>('SELECT count(*)::int AS n FROM "Devices"');
    assert.equal(devices[0]?.n, 1);
    await other.close();
  });

  test('bad arguments: exit 2 with the usage, the URL mistake named without its password', async () => {
    const run = await migrateStore(dataDir, [`mysql://u:${server.password}@h/d`]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /the URL has scheme 'mysql:'/);
    assert.match(run.stderr, /usage: npm run migrate-store/);
    assert.ok(!run.stderr.includes(server.password));
  });
});
