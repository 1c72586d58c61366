/**
 * GET /backup and `npm run restore`: a round trip gives back the same devices, events and sessions;
 * a backup taken while another client writes restores to a consistent store; a running server's
 * store and files that are not netkeep databases are refused, changing nothing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { SqliteDevices } from '../../src/store/sqlite/devices.js';
import { deviceSql } from '../../src/store/sqlite/device-sql.js';
import { presenceHours } from '../../src/store/devices.js';
import { dbTime, periods, periodStart, type Period } from '../../src/time.js';
import { eventually } from '../helpers/processes.js';
import { TestServer } from '../helpers/server.js';

const restoreScript = fileURLToPath(new URL('../../../scripts/restore.mjs', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'netkeep-restore-'));
after(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function restore(dataDir: string, file: string) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: dataDir };
  return spawnSync(process.execPath, [restoreScript, file], { env, encoding: 'utf8' });
}

const mac = (i: number) =>
  `02:bb:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;

/** History written as the scanner would (another connection: the server sees it through its probe). */
function seedHistory(dataDir: string, devices: number, perDevice: number): void {
  const db = new Database(join(dataDir, 'netkeep.db'));
  db.pragma('busy_timeout = 5000');
  const event = db.prepare(
    "INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType) VALUES (?, '10.1.0.1', ?, ?)",
  );
  const session = db.prepare(
    "INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection, ses_EventTypeDisconnection, ses_DateTimeDisconnection) VALUES (?, '10.1.0.1', 'Connected', ?, 'Disconnected', ?)",
  );
  db.transaction(() => {
    for (let d = 0; d < devices; d++)
      for (let i = 0; i < perDevice; i++) {
        const at = new Date(Date.UTC(2026, 0, 1) + (d * perDevice + i) * 600_000);
        event.run(mac(d), dbTime(at), i % 3 === 0 ? 'Device Down' : 'Connected');
        session.run(mac(d), dbTime(at), dbTime(new Date(at.getTime() + 300_000)));
      }
  })();
  db.close();
}

/** Every row of the tables a restore must give back, in a stable order. */
function dump(file: string): unknown {
  const db = new Database(file, { readonly: true });
  try {
    return {
      devices: db.prepare('SELECT * FROM Devices ORDER BY devMac').all(),
      events: db.prepare('SELECT * FROM Events ORDER BY rowid').all(),
      sessions: db.prepare('SELECT * FROM Sessions ORDER BY rowid').all(),
    };
  } finally {
    db.close();
  }
}

async function download(server: TestServer, file: string): Promise<void> {
  const res = await fetch(`${server.url}/backup`, { headers: { authorization: `Bearer ${server.token}` } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/vnd.sqlite3');
  assert.match(
    res.headers.get('content-disposition') ?? '',
    /^attachment; filename="netkeep-\d{8}-\d{6}\.db"$/,
  );
  writeFileSync(file, Buffer.from(await res.arrayBuffer()));
}

/** The store is intact and every kept count of every device equals a recount from the raw rows. */
function assertConsistent(file: string): void {
  const db = openDatabase(file);
  try {
    assert.equal(db.prepare('PRAGMA integrity_check').pluck().get(), 'ok');
    const repo = new SqliteDevices(db);
    const eventCounts = db.prepare<[{ mac: string; start: string }], { events: number; downAlerts: number }>(
      deviceSql.eventCounts,
    );
    const sessionStats = db.prepare<
      [{ mac: string; start: string; now: string }],
      { sessions: number; seconds: number }
    >(deviceSql.sessionStats);
    const now = new Date();
    const macs = db.prepare('SELECT devMac FROM Devices').pluck().all() as string[];
    for (const device of macs)
      for (const period of Object.keys(periods) as Period[]) {
        const start = periodStart(period, now) ?? '';
        const events = eventCounts.get({ mac: device, start });
        const sessions = sessionStats.get({ mac: device, start, now: dbTime(now) });
        assert.deepEqual(repo.stats(device, period, now), {
          devSessions: sessions?.sessions ?? 0,
          devEvents: events?.events ?? 0,
          devDownAlerts: events?.downAlerts ?? 0,
          devPresenceHours: presenceHours(sessions?.seconds ?? 0),
        });
      }
  } finally {
    db.close();
  }
}

describe('backup and restore', () => {
  test('GET /backup, then npm run restore, gives back the same devices, events and sessions', async () => {
    const server = await TestServer.start();
    const download1 = join(scratch, 'round-trip.db');
    try {
      for (let i = 0; i < 12; i++) {
        const res = await server.request('POST', `/device/${mac(i)}`, {
          body: { createNew: true, devName: `<b>device ${i}</b>`, devOwner: i % 2 ? 'Alice' : 'Bob' },
        });
        assert.equal(res.status, 200, res.text);
      }
      seedHistory(server.dataDir, 12, 5);
      await download(server, download1);
      // Removed when the server's file stream closes, which may come just after the client has
      // read the last byte.
      assert.ok(
        await eventually(() => readdirSync(server.dataDir).every((f) => !f.startsWith('.backup-'))),
        'the temporary file is removed once sent',
      );

      const busy = restore(server.dataDir, download1);
      assert.equal(busy.status, 2, busy.stdout);
      assert.match(busy.stderr, /is in use: stop the netkeep server/);
      assert.equal(
        (await server.request('GET', '/devices')).json.total,
        12,
        'a running server is left alone',
      );
    } finally {
      await server.stop({ keepData: true });
    }
    const before = dump(join(server.dataDir, 'netkeep.db'));

    const fresh = join(scratch, 'fresh');
    mkdirSync(fresh);
    const run = restore(fresh, download1);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /: 12 devices, 60 events, 60 sessions\n/);
    assert.deepEqual(dump(join(fresh, 'netkeep.db')), before);

    // Into the stopped server's own DATA_DIR: the store it replaces is kept.
    const again = restore(server.dataDir, download1);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(
      readdirSync(server.dataDir).filter((f) => f.startsWith('netkeep.db.before-restore-')).length,
      1,
    );
    const restarted = await TestServer.start({ dataDir: fresh });
    try {
      const list = await restarted.request('GET', '/devices');
      assert.equal(list.json.total, 12);
      const one = await restarted.request('GET', `/device/${mac(3)}`);
      assert.equal(one.json.devName, '<b>device 3</b>');
    } finally {
      await restarted.stop();
    }
    rmSync(server.dataDir, { recursive: true, force: true });
  });

  test('a backup taken while another client writes restores to a consistent store', async () => {
    const server = await TestServer.start();
    try {
      for (let i = 0; i < 200; i++) {
        const res = await server.request('POST', `/device/${mac(i)}`, {
          body: { createNew: true, devName: `d${i}` },
        });
        assert.equal(res.status, 200, res.text);
      }
      seedHistory(server.dataDir, 200, 100);
      let writing = true;
      let writes = 0;
      const writer = async (worker: number) => {
        for (let n = 0; writing; n++) {
          const i = 200 + worker * 10_000 + n;
          const created = await server.request('POST', `/device/${mac(i % 60_000)}`, {
            body: { createNew: true, devName: `w${i}` },
          });
          assert.equal(created.status, 200, created.text);
          // Deleting a seeded device removes its events and sessions with it (counts change).
          const removed = await server.request('DELETE', `/device/${mac((worker * 50 + n) % 200)}/delete`);
          assert.ok(removed.status === 200 || removed.status === 404, removed.text);
          writes += 2;
        }
      };
      const writers = [0, 1, 2].map(writer);
      const files: string[] = [];
      try {
        for (let b = 0; b < 3; b++) {
          const file = join(scratch, `under-load-${b}.db`);
          await download(server, file);
          files.push(file);
        }
      } finally {
        writing = false;
        await Promise.all(writers);
      }
      assert.ok(writes > 0, 'writes ran while the backups were taken');
      for (const [b, file] of files.entries()) {
        const dataDir = join(scratch, `load-${b}`);
        mkdirSync(dataDir);
        const run = restore(dataDir, file);
        assert.equal(run.status, 0, run.stderr);
        assertConsistent(join(dataDir, 'netkeep.db'));
      }
    } finally {
      await server.stop();
    }
  });

  test('a cookie-only GET /backup must come from the console own pages', async () => {
    const server = await TestServer.start();
    try {
      const signIn = await server.request('POST', '/session', { token: null, body: { token: server.token } });
      const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
      assert.match(cookie, /^netkeep_session=/);
      const refused = await server.request('GET', '/backup', { token: null, headers: { cookie } });
      assert.equal(refused.status, 403);
      assert.equal(refused.json.code, 'ORIGIN_REQUIRED');
      const ours = await fetch(`${server.url}/backup`, {
        headers: { cookie, 'sec-fetch-site': 'same-origin' },
      });
      assert.equal(ours.status, 200);
      assert.ok((await ours.arrayBuffer()).byteLength > 0);
    } finally {
      await server.stop();
    }
  });

  test('files that are not netkeep backups are refused with exit 2, changing nothing', () => {
    const dataDir = join(scratch, 'hostile');
    mkdirSync(dataDir);
    const store = openDatabase(join(dataDir, 'netkeep.db'));
    store.close();
    const good = join(scratch, 'good.db');
    const cases: [string, () => void, RegExp][] = [
      [
        'text.db',
        () => {
          writeFileSync(join(scratch, 'text.db'), 'hello, not a database\n');
        },
        /is not a SQLite database/,
      ],
      [
        'truncated.db',
        () => {
          const db = openDatabase(good);
          db.exec(
            'CREATE TABLE filler (x); INSERT INTO filler WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400) SELECT hex(randomblob(500)) FROM n',
          );
          db.close();
          const bytes = new Uint8Array(readFileSync(good));
          writeFileSync(join(scratch, 'truncated.db'), bytes.subarray(0, Math.floor(bytes.length / 3)));
        },
        /is damaged/,
      ],
      [
        'other.db',
        () => {
          const db = new Database(join(scratch, 'other.db'));
          db.exec('CREATE TABLE notes (x)');
          db.close();
        },
        /not a netkeep one/,
      ],
      [
        'newer.db',
        () => {
          const db = openDatabase(join(scratch, 'newer.db'));
          db.pragma('user_version = 9999');
          db.close();
        },
        /newer than this netkeep/,
      ],
      [
        'fifo',
        () => {
          const made = spawnSync('mkfifo', [join(scratch, 'fifo')]);
          assert.equal(made.status, 0);
        },
        /is not a regular file/,
      ],
      ['missing.db', () => undefined, /does not exist/],
    ];
    const before = dump(join(dataDir, 'netkeep.db'));
    for (const [name, make, message] of cases) {
      make();
      const run = restore(dataDir, join(scratch, name));
      assert.equal(run.status, 2, `${name}: ${run.stdout}`);
      assert.match(run.stderr, message, name);
      assert.match(run.stderr, /nothing was changed/);
    }
    assert.deepEqual(
      readdirSync(dataDir).filter((f) => f.includes('before-restore')),
      [],
    );
    assert.deepEqual(dump(join(dataDir, 'netkeep.db')), before);
    assert.ok(existsSync(join(dataDir, 'netkeep.db')));
  });
});
