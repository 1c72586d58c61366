/**
 * `npm run import` end to end: filled copies of the real NetAlertX and Pi.Alert databases are
 * imported by the real CLI (a child process) into the data directory of a running server, and the
 * result is read back through the server's HTTP API. Then: a second run adds nothing, a dry run
 * changes nothing, and the source file is byte for byte what it was.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import { dumpCounts } from '../devices/history.js';
import { asNobody, nodeCommand } from '../helpers/processes.js';
import { TestServer } from '../helpers/server.js';
import Database from 'better-sqlite3';
import { historyCountsBackfill } from '../../src/store/sqlite/migrations.js';
import {
  addManyEvents,
  addManySessions,
  netAlertXCamelCaseCopy,
  netAlertXCopy,
  netAlertXWalCopy,
  piAlertCopy,
  routerGuid,
} from './fixtures.js';

const cli = fileURLToPath(new URL('../../src/import/cli.js', import.meta.url));
const importScript = fileURLToPath(new URL('../../../scripts/import.mjs', import.meta.url));

type Json = Record<string, unknown>;

/** The fixtures' history is from 2023-2024: keep it from the server's retention. */
const keepHistory = { HISTORY_DAYS: '36500' };

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runImport(
  dataDir: string,
  args: string[],
  env: Record<string, string> = {},
  script = cli,
  wrapper: readonly string[] = [],
): Run {
  const { command, args: argv } = nodeCommand(script, args, wrapper);
  const result = spawnSync(command, argv, {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: dataDir, TZ: 'UTC', ...env },
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** "added N" of one table's summary line. */
function added(stdout: string, table: string): number {
  const match = new RegExp(`^\\s+${table}\\s+read \\d+: (?:would add|added) (\\d+)`, 'm').exec(stdout);
  assert.ok(match?.[1], `no ${table} line in:\n${stdout}`);
  return Number(match[1]);
}

async function getJson(server: TestServer, path: string): Promise<Json> {
  const res = await server.request('GET', path);
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  return res.json;
}

describe('npm run import: NetAlertX app.db into a running server', () => {
  const source = netAlertXCopy();
  const sourceHash = sha256(source);
  let server: TestServer;
  let first: Run;

  after(async () => {
    await server.stop();
    rmSync(join(source, '..'), { recursive: true, force: true });
  });

  test('imports while the server runs, naming every skipped row', async () => {
    server = await TestServer.start({ env: keepHistory });
    // Through the npm script's entry (bootstrap, then the compiled CLI), as an operator runs it.
    first = runImport(server.dataDir, [source], {}, importScript);
    assert.equal(first.status, 0, first.stderr + first.stdout);
    assert.match(first.stdout, /NetAlertX/);
    assert.match(first.stdout, /Europe\/Berlin \(the source's TIMEZONE setting\)/);
    assert.equal(added(first.stdout, 'devices'), 4);
    assert.equal(added(first.stdout, 'events'), 3);
    assert.equal(added(first.stdout, 'sessions'), 3);
    for (const expected of [
      /skipped Devices row \d+ \(Internet\): 'Internet' is not a MAC address/,
      /skipped Devices row \d+ \(zz:zz\): 'zz:zz' is not a MAC address/,
      /skipped Events row \d+ \(Internet\): 'Internet' is not a MAC address/,
      /skipped Events row \d+ \(aa:bb:cc:00:00:02\): eve_DateTime 'yesterday' is not a date-time/,
      /skipped Events row \d+ \(aa:bb:cc:99:99:99\): no device with this MAC/,
      /skipped Sessions row \d+ \(aa:bb:cc:00:00:02\): ses_DateTimeConnection '2024-13-01 00:00:00' is not a date-time/,
      /device aa:bb:cc:00:00:04 \(Devices row \d+\): devLastNotification 'garbage' refused/,
      /device aa:bb:cc:00:00:03 \(Devices row \d+\): devGUID 'not-a-uuid' refused/,
    ])
      assert.match(first.stdout, expected);
    assert.match(first.stderr, /Events \d+\/6/, 'progress on stderr');
  });

  test('devices keep their fields, with MACs normalised and times in UTC', async () => {
    const router = await getJson(server, '/device/aa:bb:cc:00:00:01');
    assert.equal(router.devName, 'Router');
    assert.equal(router.devNameSource, 'import', 'an imported name is never replaced by automatic naming');
    assert.equal(router.devType, 'Router');
    assert.equal(router.devFavorite, 1);
    assert.equal(router.devPresentLastScan, 1);
    assert.equal(router.devStatus, 'On-line');
    assert.equal(router.devGUID, routerGuid);
    assert.equal(router.devParentMAC, 'Internet');
    // The columns NetAlertX adds at run time (ALTER TABLE in the fixture copy).
    assert.equal(router.devFQDN, 'router.lan');
    assert.equal(router.devParentRelType, 'nic');
    assert.equal(router.devReqNicsOnline, 1);
    assert.deepEqual(router.devCustomProps, [{ name: 'rack', value: 'A1' }]);
    assert.ok(router.devSkipRepeated === 24 || router.devSkipRepeated === 1, String(router.devSkipRepeated));
    // 02:30 on 2024-03-31 never happened in Berlin: read as 03:30 CEST = 01:30 UTC.
    assert.equal(router.devFirstConnection, '2024-03-31T01:30:00Z');
    assert.equal(router.devLastConnection, '2024-07-01T10:00:00Z');

    const phone = await getJson(server, '/device/aa:bb:cc:00:00:02');
    assert.equal(phone.devStatus, 'Down');
    assert.equal(phone.devIsNew, 1);
    assert.equal(phone.devParentMAC, 'aa:bb:cc:00:00:01');
    assert.equal(phone.devParentPort, 3);
    const laptop = await getJson(server, '/device/aa:bb:cc:00:00:03');
    assert.equal(laptop.devIsArchived, 1);
    assert.match(String(laptop.devGUID), /^[0-9a-f-]{36}$/);
    assert.notEqual(laptop.devGUID, 'not-a-uuid');
    const tv = await getJson(server, '/device/aa:bb:cc:00:00:04');
    assert.equal(tv.devLastNotification, null);
    assert.ok(tv.devSkipRepeated === 8760 || tv.devSkipRepeated === 1, String(tv.devSkipRepeated));
    const devices = await getJson(server, '/devices');
    assert.equal(devices.total, 4);
  });

  test('events and sessions arrive in UTC; the repeated hour is read as its first occurrence', async () => {
    const events = (await getJson(server, '/device/aa:bb:cc:00:00:01/events')).events as Json[];
    assert.deepEqual(
      events.map((e) => [e.eve_DateTime, e.eve_EventType, e.eve_PendingAlertEmail]),
      [
        // 02:30 on 2024-10-27 happened twice in Berlin: the first (CEST, UTC+2) is taken.
        ['2024-10-27T00:30:00Z', 'Connected', 0],
        ['2024-01-15T09:00:00Z', 'New Device', 0],
      ],
    );
    const sessions = (await getJson(server, '/device/aa:bb:cc:00:00:01/sessions')).sessions as Json[];
    assert.equal(sessions.length, 1);
    assert.deepEqual(
      sessions.map((s) => [s.ses_DateTimeConnection, s.ses_DateTimeDisconnection]),
      [['2024-01-15T09:00:00Z', '2024-01-15T11:00:00Z']],
    );
    const tv = (await getJson(server, '/device/aa:bb:cc:00:00:04/sessions')).sessions as Json[];
    assert.equal(tv[0]?.ses_StillConnected, 1);
    const phone = (await getJson(server, '/device/aa:bb:cc:00:00:02/sessions')).sessions as Json[];
    assert.deepEqual(
      phone.map((s) => [s.ses_DateTimeConnection, s.ses_DateTimeDisconnection]),
      [[null, '2024-07-02T07:00:00Z']],
    );
    const device = await getJson(server, '/device/aa:bb:cc:00:00:02');
    assert.equal(device.devDownAlerts, 1);
  });

  test('a second run adds nothing; a dry run changes nothing; the source is unchanged', async () => {
    assertCountsAsRecounted(server.dataDir);
    const db = join(server.dataDir, 'netkeep.db');
    const second = runImport(server.dataDir, [source]);
    assert.equal(second.status, 0, second.stderr);
    assert.equal(added(second.stdout, 'devices'), 0);
    assert.equal(added(second.stdout, 'events'), 0);
    assert.equal(added(second.stdout, 'sessions'), 0);
    assert.match(second.stdout, /devices\s+read 6: added 0, 0 filled in, already present 4, skipped 2/);

    // An edit made in netkeep survives a re-import.
    const edit = await server.request('POST', '/device/aa:bb:cc:00:00:01', {
      body: { devName: 'Edge router' },
    });
    assert.equal(edit.status, 200);
    const before = JSON.stringify((await getJson(server, '/devices')).devices);
    const dry = runImport(server.dataDir, ['--dry-run', source]);
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /Dry run \(nothing was changed\)/);
    assert.equal(added(dry.stdout, 'events'), 0);
    assert.equal(JSON.stringify((await getJson(server, '/devices')).devices), before);
    const third = runImport(server.dataDir, [source]);
    assert.equal(added(third.stdout, 'devices'), 0);
    assert.equal((await getJson(server, '/device/aa:bb:cc:00:00:01')).devName, 'Edge router');
    assert.ok(existsSync(db));
    assert.equal(sha256(source), sourceHash, 'the source database is byte for byte unchanged');
  });
});

describe('npm run import: Pi.Alert database', () => {
  const source = piAlertCopy();
  const sourceHash = sha256(source);
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-import-'));
  let server: TestServer | undefined;

  after(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(join(source, '..'), { recursive: true, force: true });
  });

  test('a dry run into a missing database creates nothing and says what it would do', () => {
    const dry = runImport(dataDir, ['--dry-run', '--timezone', 'America/New_York', source]);
    assert.equal(dry.status, 0, dry.stderr);
    assert.equal(added(dry.stdout, 'devices'), 2);
    assert.equal(added(dry.stdout, 'events'), 2);
    assert.equal(added(dry.stdout, 'sessions'), 1);
    assert.ok(!existsSync(join(dataDir, 'netkeep.db')), 'no database was created');
  });

  test('dev_* columns map by meaning; without a TIMEZONE setting the machine zone is used', async () => {
    const run = runImport(dataDir, [source], { TZ: 'America/New_York' });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /Pi\.Alert/);
    assert.match(run.stdout, /America\/New_York \(this machine's zone\)/);
    assert.match(run.stdout, /skipped Devices row 1 \(Internet\): 'Internet' is not a MAC address/);
    assert.match(run.stdout, /warning: 2 events and 1 sessions are older than HISTORY_DAYS \(365 days\)/);
    server = await TestServer.start({ dataDir, env: keepHistory });
    const nas = await getJson(server, '/device/00:11:32:aa:bb:cc');
    assert.equal(nas.devType, 'NAS');
    assert.equal(nas.devOwner, 'Ana');
    assert.equal(nas.devAlertDown, 1);
    assert.equal(nas.devIsNew, 0);
    assert.equal(nas.devScan, 1);
    assert.equal(nas.devFavorite, 1);
    assert.equal(nas.devFirstConnection, '2023-06-01T13:00:00Z'); // EDT, UTC-4
    assert.equal(nas.devStatus, 'Down');
    const camera = await getJson(server, '/device/00:11:32:aa:bb:cd');
    assert.equal(camera.devIsArchived, 1);
    assert.equal(camera.devIsNew, 1);
    assert.equal(camera.devScan, 0);
    const events = (await getJson(server, '/device/00:11:32:aa:bb:cc/events')).events as Json[];
    assert.deepEqual(
      events.map((e) => e.eve_DateTime),
      ['2023-12-01T14:00:00Z', '2023-06-01T13:00:00Z'], // EST (UTC-5) in December
    );
    assert.equal(sha256(source), sourceHash);
  });

  test('bad arguments exit 2 with a usage line', () => {
    assert.equal(runImport(dataDir, []).status, 2);
    const zone = runImport(dataDir, ['--timezone', 'Mars/Olympus', source]);
    assert.equal(zone.status, 2);
    assert.match(zone.stderr, /not an IANA time zone/);
    const notDb = runImport(dataDir, [join(dataDir, 'missing.db')]);
    assert.equal(notDb.status, 2);
    assert.match(notDb.stderr, /cannot be opened/);
  });

  test('with DATABASE_URL set it refuses (exit 2), names migrate-store, and writes nothing', () => {
    const empty = mkdtempSync(join(tmpdir(), 'netkeep-import-pg-'));
    try {
      // No PostgreSQL listens there: the refusal comes before any connection or read.
      const url = 'postgres://netkeep:s3cret-pw@127.0.0.1:9/netkeep';
      for (const args of [[source], ['--dry-run', source]]) {
        const run = runImport(empty, args, { DATABASE_URL: url });
        assert.equal(run.status, 2, run.stderr + run.stdout);
        assert.match(run.stderr, /DATABASE_URL is set, but the import writes only a SQLite store/);
        assert.match(run.stderr, /npm run migrate-store/);
        assert.equal(run.stdout, '');
        assert.doesNotMatch(run.stderr, /s3cret-pw/);
      }
      assert.deepEqual(readdirSync(empty), [], 'nothing was created in DATA_DIR');
      assert.equal(sha256(source), sourceHash);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('npm run import: a NetAlertX database in WAL mode, in a directory the importer may not write', () => {
  const source = netAlertXWalCopy();
  const sourceDir = join(source, '..');
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-import-'));
  const hashes = () => readdirSync(sourceDir).map((name) => `${name} ${sha256(join(sourceDir, name))}`);
  // As root, the import runs as nobody (the directory is root's, 0755); otherwise the directory is
  // made read-only for us. Either way SQLite could not create app.db-shm beside the source.
  const importAs = process.getuid?.() === 0 ? asNobody : [];
  after(() => {
    chmodSync(sourceDir, 0o755);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(join(sourceDir, '..'), { recursive: true, force: true });
  });

  test('reads a copy with the rows of app.db-wal; nothing is created beside the source', async () => {
    chmodSync(dataDir, 0o777);
    chmodSync(join(sourceDir, '..'), 0o755); // mkdtemp's 0700 would keep nobody out altogether
    if (importAs.length === 0) chmodSync(sourceDir, 0o555);
    const before = hashes();
    assert.deepEqual(readdirSync(sourceDir).sort(), ['app.db', 'app.db-wal']);
    const run = runImport(dataDir, [source], {}, cli, importAs);
    assert.equal(run.status, 0, run.stderr + run.stdout);
    assert.match(run.stdout, /read from a copy of it \(it is in WAL mode\)/);
    assert.equal(added(run.stdout, 'devices'), 5, 'four devices of app.db and one only in app.db-wal');
    assert.equal(added(run.stdout, 'events'), 4);
    assert.deepEqual(hashes(), before, 'app.db and app.db-wal unchanged, no app.db-shm');
    assert.deepEqual(readdirSync(dataDir).sort(), ['netkeep.db'], 'the copy was removed');
    const server = await TestServer.start({ dataDir, env: keepHistory });
    try {
      assert.equal((await getJson(server, '/device/aa:bb:cc:00:00:05')).devName, 'In WAL');
    } finally {
      await server.stop();
    }
  });
});

describe('npm run import: a database of a 2026 NetAlertX (camelCase history columns, UTC times)', () => {
  const source = netAlertXCamelCaseCopy();
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-import-'));
  after(() => {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(join(source, '..'), { recursive: true, force: true });
  });

  test('reads eveMac/sesMac... and takes the times as UTC, whatever its TIMEZONE setting', async () => {
    const run = runImport(dataDir, [source]);
    assert.equal(run.status, 0, run.stderr + run.stdout);
    assert.match(run.stdout, /times read as UTC, as stored: its setting DB_TIMESTAMPS_UTC_MIGRATED/);
    assert.equal(added(run.stdout, 'devices'), 4);
    assert.equal(added(run.stdout, 'events'), 3, 'the same events as from the older column names');
    assert.equal(added(run.stdout, 'sessions'), 3);
    assert.match(run.stdout, /skipped Events row \d+ \(Internet\): 'Internet' is not a MAC address/);
    const server = await TestServer.start({ dataDir, env: keepHistory });
    try {
      const router = await getJson(server, '/device/aa:bb:cc:00:00:01');
      assert.equal(router.devFirstConnection, '2024-03-31T02:30:00Z', 'UTC as stored, not moved');
      const events = (await getJson(server, '/device/aa:bb:cc:00:00:01/events')).events as Json[];
      assert.deepEqual(
        events.map((e) => e.eve_DateTime),
        ['2024-10-27T02:30:00Z', '2024-01-15T10:00:00Z'],
      );
      const sessions = (await getJson(server, '/device/aa:bb:cc:00:00:01/sessions')).sessions as Json[];
      assert.deepEqual(
        sessions.map((s) => [s.ses_DateTimeConnection, s.ses_DateTimeDisconnection]),
        [['2024-01-15T10:00:00Z', '2024-01-15T12:00:00Z']],
      );
    } finally {
      await server.stop();
    }
    // --timezone still wins (a database converted by hand, say).
    const dry = runImport(dataDir, ['--dry-run', '--timezone', 'Europe/Berlin', source]);
    assert.match(dry.stdout, /times read as Europe\/Berlin \(--timezone\)/);
  });
});

/**
 * The import counts history in bulk with its count triggers off (src/import/bulk-counts.ts): the
 * count tables it leaves must equal a recount of the raw rows by the counts migration's backfill,
 * and the triggers must be back.
 */
function assertCountsAsRecounted(dataDir: string): void {
  const db = new Database(join(dataDir, 'netkeep.db'));
  try {
    const imported = dumpCounts(db);
    db.exec('BEGIN');
    db.exec('DELETE FROM DeviceHistoryTotals; DELETE FROM DeviceHistoryBuckets;');
    db.exec(historyCountsBackfill);
    const recounted = dumpCounts(db);
    db.exec('ROLLBACK');
    assert.deepEqual(imported, recounted, 'the counts equal a recount of the rows');
    assert.deepEqual(
      db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_counts_%' ORDER BY name",
        )
        .pluck()
        .all(),
      [
        'Events_counts_delete',
        'Events_counts_insert',
        'Events_counts_update',
        'Sessions_counts_delete',
        'Sessions_counts_insert',
        'Sessions_counts_update',
      ],
      'every count trigger is there after the import',
    );
  } finally {
    db.close();
  }
}

describe('npm run import: 50,000 events and 25,000 sessions', () => {
  test('imports in batches, counted exactly; a second run adds none', async () => {
    const source = netAlertXCopy();
    addManyEvents(source, 'AA:BB:CC:00:00:04', 50_000);
    addManySessions(source, 'AA:BB:CC:00:00:04', 25_000);
    const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-import-'));
    try {
      const run = runImport(dataDir, [source]);
      assert.equal(run.status, 0, run.stderr);
      assert.equal(added(run.stdout, 'events'), 50_003);
      // Less than 25,002: an hour that a spring DST change skips is read as the next one, whose
      // session is then already there.
      assert.ok(added(run.stdout, 'sessions') > 24_990, run.stdout);
      assertCountsAsRecounted(dataDir);
      const schemaVersion = (): unknown => {
        const db = new Database(join(dataDir, 'netkeep.db'), { readonly: true });
        try {
          return db.pragma('schema_version', { simple: true });
        } finally {
          db.close();
        }
      };
      const before = schemaVersion();
      const again = runImport(dataDir, [source]);
      assert.equal(added(again.stdout, 'events'), 0);
      assert.equal(schemaVersion(), before, 'a run that adds nothing does not touch the schema');
      assertCountsAsRecounted(dataDir);
      const server = await TestServer.start({ dataDir, env: keepHistory });
      try {
        const page = await getJson(server, '/device/aa:bb:cc:00:00:04/events?limit=1');
        assert.equal(page.total, 50_000);
        // 25,000 Device Down and IP Changed events (Connected/Disconnected are not counted).
        const device = await getJson(server, '/device/aa:bb:cc:00:00:04');
        assert.deepEqual([device.devEvents, device.devDownAlerts], [25_000, 12_500]);
        assert.ok(Number(device.devSessions) > 24_990, String(device.devSessions));
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(join(source, '..'), { recursive: true, force: true });
    }
  });
});
