/**
 * The importer against hostile source files: history rows with 10 MB texts (skipped by the
 * catalogue's text bound, named in short messages; the device's events then list), a FIFO given as
 * the source or as its `-wal` (refused at once, no copy left behind), and an Events table the
 * importer cannot read (WITHOUT ROWID: refused before anything is written, never a raw SqliteError).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { maxTextLength } from '../../src/devices/catalogue.js';
import { openDatabase } from '../../src/db/connection.js';
import { isDomainError } from '../../src/errors.js';
import { importDatabase, type SkippedRow, type ValueNote } from '../../src/store/sqlite/import/importer.js';
import { InProcessServer } from '../helpers/inject.js';
import { nodeCommand } from '../helpers/processes.js';
import { netAlertXCopy, netAlertXWalCopy } from './fixtures.js';

const cli = fileURLToPath(new URL('../../src/import/cli.js', import.meta.url));

const huge = 10 * 1024 * 1024;

describe('import: history rows with 10 MB texts', () => {
  let server: InProcessServer;
  const skipped: SkippedRow[] = [];
  const notes: ValueNote[] = [];
  before(async () => {
    const source = netAlertXCopy();
    const db = new Database(source);
    const event = db.prepare(
      `INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo, eve_PendingAlertEmail)
       VALUES (?, ?, ?, ?, ?, 0)`,
    );
    const big = 'x'.repeat(huge);
    event.run('aa:bb:cc:00:00:01', '192.168.1.1', '2024-08-01 10:00:00', 'Connected', big);
    event.run('aa:bb:cc:00:00:01', big, '2024-08-01 11:00:00', 'Connected', '');
    event.run('aa:bb:cc:00:00:01', '192.168.1.1', '2024-08-01 12:00:00', big, '');
    event.run(big, '192.168.1.1', '2024-08-01 13:00:00', 'Connected', '');
    // Just within the bound: taken.
    event.run(
      'aa:bb:cc:00:00:01',
      '192.168.1.1',
      '2024-08-01 14:00:00',
      'Connected',
      'y'.repeat(maxTextLength),
    );
    db.prepare(
      `INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
         ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected, ses_AdditionalInfo)
       VALUES ('aa:bb:cc:00:00:01', '192.168.1.1', 'Connected', '2024-08-01 10:00:00', 'Disconnected',
         '2024-08-01 11:00:00', 0, ?)`,
    ).run(big);
    db.prepare("UPDATE Devices SET devComments = ? WHERE devMac = 'aabbcc000004'").run(big);
    db.close();
    server = await InProcessServer.start({ HISTORY_DAYS: '36500' });
    try {
      importDatabase({
        source,
        target: join(server.dataDir, 'netkeep.db'),
        timeZone: 'UTC',
        onSkip: (row) => skipped.push(row),
        onNote: (note) => notes.push(note),
      });
    } finally {
      rmSync(join(source, '..'), { recursive: true, force: true });
    }
  });
  after(async () => {
    await server.stop();
  });

  test('rows with a text over the bound are skipped, each named in a short message', () => {
    const long = skipped.filter((row) => /characters long/.test(row.reason) || row.mac.length > 17);
    assert.deepEqual(
      long.map((row) => [row.table, row.reason]),
      [
        [
          'Events',
          `eve_AdditionalInfo is ${huge} characters long, over the ${maxTextLength} a text column holds`,
        ],
        ['Events', `eve_IP is ${huge} characters long, over the ${maxTextLength} a text column holds`],
        ['Events', `eve_EventType is ${huge} characters long, over the ${maxTextLength} a text column holds`],
        ['Events', `'${'x'.repeat(64)}... (${huge} characters)' is not a MAC address`],
        [
          'Sessions',
          `ses_AdditionalInfo is ${huge} characters long, over the ${maxTextLength} a text column holds`,
        ],
      ],
    );
    for (const row of skipped)
      assert.ok(row.mac.length + row.reason.length < 300, JSON.stringify(row).slice(0, 300));
    for (const note of notes) assert.ok(note.note.length < 300, note.note.slice(0, 300));
    assert.ok(
      notes.some((n) => n.note.startsWith(`devComments '${'x'.repeat(64)}... (${huge} characters)' refused`)),
    );
  });

  test("GET /device/<mac>/events lists the device's events, none over the bound", async () => {
    const res = await server.request('GET', '/device/aa:bb:cc:00:00:01/events?period=all&limit=1000');
    assert.equal(res.status, 200);
    const events = res.json.events as Array<Record<string, unknown>>;
    assert.ok(events.some((e) => e.eve_AdditionalInfo === 'y'.repeat(maxTextLength)));
    for (const e of events)
      for (const value of Object.values(e)) assert.ok(String(value).length <= maxTextLength);
    assert.ok(res.text.length < 1024 * 1024, `answer of ${res.text.length} characters`);
    const sessions = await server.request('GET', '/device/aa:bb:cc:00:00:01/sessions?period=all&limit=1000');
    assert.equal(sessions.status, 200);
    assert.ok(sessions.text.length < 1024 * 1024);
  });
});

/** `npm run import` as a child, stopped (SIGKILL) if it is still running after a minute. */
function runImport(dataDir: string, args: string[]) {
  const { command, args: argv } = nodeCommand(cli, args);
  return spawnSync(command, argv, {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: dataDir, TZ: 'UTC', HISTORY_DAYS: '36500' },
    encoding: 'utf8',
    // A ceiling only: the import answers at once, or hangs for ever (what this test catches).
    timeout: 60_000,
    killSignal: 'SIGKILL',
  });
}

function mkfifo(path: string): void {
  const made = spawnSync('mkfifo', [path], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
}

/** The import's copies of a WAL-mode source left in a directory. */
function copiesIn(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith('netkeep-import-source-'));
}

describe('import: a source that is not a regular file, or has a FIFO beside it', () => {
  const dirs: string[] = [];
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'netkeep-import-hostile-'));
    dirs.push(dir);
    return dir;
  };
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('a FIFO as the source is refused at once with exit 2', () => {
    const fifo = join(tempDir(), 'app.db');
    mkfifo(fifo);
    const dataDir = tempDir();
    const run = runImport(dataDir, [fifo]);
    assert.equal(run.signal, null, 'the import hung on the FIFO');
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /app\.db is a FIFO, not a regular file/);
    assert.deepEqual(readdirSync(dataDir), []);
  });

  test('a FIFO as the -wal of a WAL-mode source is refused; no copy is left behind', () => {
    const source = netAlertXWalCopy();
    dirs.push(join(source, '..', '..'));
    unlinkSync(`${source}-wal`);
    mkfifo(`${source}-wal`);
    const dataDir = tempDir();
    const run = runImport(dataDir, [source]);
    assert.equal(run.signal, null, 'the import hung on the FIFO');
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /app\.db-wal is a FIFO, not a regular file/);
    assert.deepEqual(copiesIn(dataDir), []);
  });

  test("a copy left by a killed import is removed by the next one; the import's own goes too", () => {
    const source = netAlertXWalCopy();
    dirs.push(join(source, '..', '..'));
    const dataDir = tempDir();
    // A pid above Linux's pid_max: that process is gone.
    mkdirSync(join(dataDir, 'netkeep-import-source-999999999-AbCdEf'));
    const run = runImport(dataDir, [source]);
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(copiesIn(dataDir), []);
  });
});

describe('import: failures are clear sentences, found before anything is written where they can be', () => {
  test('a WITHOUT ROWID Events table is refused before anything is written, never a raw SqliteError', () => {
    const source = netAlertXCopy();
    const target = join(mkdtempSync(join(tmpdir(), 'netkeep-import-target-')), 'netkeep.db');
    try {
      const db = new Database(source);
      db.exec(`
        DROP TABLE Events;
        CREATE TABLE Events (eve_MAC TEXT NOT NULL, eve_IP TEXT, eve_DateTime TEXT NOT NULL,
          eve_EventType TEXT NOT NULL, eve_AdditionalInfo TEXT, eve_PendingAlertEmail INTEGER,
          eve_PairEventRowid INTEGER, PRIMARY KEY (eve_MAC, eve_DateTime, eve_EventType)) WITHOUT ROWID;
        INSERT INTO Events VALUES ('aa:bb:cc:00:00:01', '192.168.1.1', '2024-08-01 10:00:00', 'Connected', '', 0, NULL);
      `);
      db.close();
      assert.throws(
        () => importDatabase({ source, target, timeZone: 'UTC' }),
        (err: unknown) =>
          isDomainError(err) &&
          err.kind === 'invalid' &&
          /its Events is a WITHOUT ROWID table; .*Nothing was imported\./.test(err.message),
      );
      let devices = 0;
      if (existsSync(target)) {
        const written = new Database(target, { readonly: true });
        devices = written.prepare('SELECT COUNT(*) FROM Devices').pluck().get() as number;
        written.close();
      }
      assert.equal(devices, 0, 'devices were imported before the Events table failed');
    } finally {
      rmSync(join(source, '..'), { recursive: true, force: true });
      rmSync(join(target, '..'), { recursive: true, force: true });
    }
  });

  test('a write that fails in the middle of a table is a sentence saying what is kept, never a raw SqliteError', () => {
    const source = netAlertXCopy();
    const target = join(mkdtempSync(join(tmpdir(), 'netkeep-import-target-')), 'netkeep.db');
    try {
      const db = openDatabase(target);
      db.exec(
        "CREATE TRIGGER refuse BEFORE INSERT ON Events BEGIN SELECT RAISE(ABORT, 'no room for events'); END",
      );
      db.close();
      assert.throws(
        () => importDatabase({ source, target, timeZone: 'UTC' }),
        (err: unknown) =>
          isDomainError(err) &&
          err.kind === 'unavailable' &&
          err.message.startsWith(`writing Events of netkeep's database (${target}) failed after `) &&
          err.message.includes('no room for events. Rows written before that are kept'),
      );
    } finally {
      rmSync(join(source, '..'), { recursive: true, force: true });
      rmSync(join(target, '..'), { recursive: true, force: true });
    }
  });
});
