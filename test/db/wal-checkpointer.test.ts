/**
 * The WAL checkpoint off the event loop: the connection no longer checkpoints itself, a worker
 * thread copies the WAL into the database file once it passes the threshold (so the WAL starts over
 * instead of growing), and a worker that fails hands the checkpoints back to the connection.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/db/connection.js';
import { GroupCommit } from '../../src/db/group-commit.js';
import { defaultThresholdFrames, WalCheckpointer } from '../../src/db/wal-checkpointer.js';
import { sqliteStore } from '../../src/store/sqlite/store.js';

const pageBytes = 4096;

/** A fresh database file with a table of page-sized rows; removed afterwards. */
async function withDatabase(use: (db: Database.Database, file: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-checkpoint-'));
  const file = join(dir, 'netkeep.db');
  const db = openDatabase(file);
  try {
    db.exec('CREATE TABLE pages (n INTEGER PRIMARY KEY, filler BLOB NOT NULL)');
    await use(db, file);
  } finally {
    if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes `rows` rows of ~3 KB in one transaction: about one WAL frame each. */
function writeRows(db: Database.Database, rows: number): void {
  const insert = db.prepare<[Buffer]>('INSERT INTO pages (filler) VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(Buffer.alloc(3000, i));
  })();
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 10_000) assert.fail(`waited 10 s for ${what}`);
    await sleep(10);
  }
}

describe('WAL checkpointer', () => {
  test('the worker copies the WAL past the threshold; the connection never does, and the WAL starts over', async () => {
    await withDatabase(async (db, file) => {
      const checkpointer = new WalCheckpointer(db, { thresholdFrames: 100, intervalMs: 5 });
      try {
        assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0);
        // 30 transactions of ~120 frames: ~3,600 frames, each a page. Kept, the WAL would hold
        // them all (~15 MB); copied and started over, it stays near a few hundred frames.
        let copiedBefore = 0;
        for (let round = 0; round < 30; round++) {
          writeRows(db, 120);
          await until(() => checkpointer.stats().framesCopied > copiedBefore, `checkpoint ${round + 1}`);
          copiedBefore = checkpointer.stats().framesCopied;
        }
        const stats = checkpointer.stats();
        assert.equal(stats.fallenBack, false);
        assert.ok(stats.checkpoints >= 30, `${stats.checkpoints} checkpoints`);
        assert.ok(stats.framesCopied >= 30 * 120, `${stats.framesCopied} frames copied`);
        const walFrames = statSync(`${file}-wal`).size / pageBytes;
        assert.ok(walFrames < 1000, `the WAL holds ${walFrames} frames' room: it was never started over`);
        assert.deepEqual(db.prepare('SELECT count(*) AS n FROM pages').get(), { n: 30 * 120 });
      } finally {
        await checkpointer.close();
      }
    });
  });

  test('under a steady stream of group commits, the second pass (writes paused) lets the WAL start over', async () => {
    await withDatabase(async (db, file) => {
      const commits = new GroupCommit(db);
      const checkpointer = new WalCheckpointer(db, { writes: commits, thresholdFrames: 200, intervalMs: 5 });
      const insert = db.prepare<[Buffer]>('INSERT INTO pages (filler) VALUES (?)');
      try {
        // Eight writers that never stop for 1.5 s: the WAL is never idle between checkpoints.
        const until = Date.now() + 1500;
        let written = 0;
        const writer = async (): Promise<void> => {
          while (Date.now() < until) {
            await commits.run(() => insert.run(Buffer.alloc(3000, written)));
            written++;
          }
        };
        await Promise.all(Array.from({ length: 8 }, writer));
        const stats = checkpointer.stats();
        assert.ok(stats.checkpoints >= 2, `${stats.checkpoints} checkpoints`);
        const walFrames = statSync(`${file}-wal`).size / pageBytes;
        // Without the paused pass the WAL would hold every write's frame (one per write, or more).
        assert.ok(
          walFrames < written / 2,
          `the WAL has room for ${walFrames} frames after ${written} writes: it was not started over`,
        );
        assert.deepEqual(db.prepare('SELECT count(*) AS n FROM pages').get(), { n: written });
      } finally {
        await checkpointer.close();
      }
    });
  });

  test('below the threshold nothing is copied and no worker starts', async () => {
    await withDatabase(async (db) => {
      const checkpointer = new WalCheckpointer(db, { intervalMs: 5 });
      try {
        // More than SQLite's own threshold (1,000), less than the default one.
        writeRows(db, 1200);
        await sleep(100);
        assert.deepEqual(checkpointer.stats(), { checkpoints: 0, framesCopied: 0, fallenBack: false });
      } finally {
        await checkpointer.close();
      }
    });
  });

  test('a worker that fails hands the checkpoints back to the connection, and says so once', async () => {
    await withDatabase(async (db) => {
      const told: Error[] = [];
      const checkpointer = new WalCheckpointer(db, {
        thresholdFrames: 10,
        intervalMs: 5,
        workerScript: new URL('data:text/javascript,throw new Error("no checkpoint here")'),
        onFallback: (error) => told.push(error),
      });
      try {
        writeRows(db, 50);
        await until(() => told.length > 0, 'the fallback');
        await sleep(50);
        assert.equal(told.length, 1);
        assert.match(told[0]?.message ?? '', /no checkpoint here/);
        assert.equal(checkpointer.stats().fallenBack, true);
        assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000);
      } finally {
        await checkpointer.close();
      }
    });
  });

  test("the file store checkpoints through a worker and its close ends it; ':memory:' has none", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netkeep-checkpoint-'));
    const file = join(dir, 'netkeep.db');
    try {
      const db = openDatabase(file);
      const store = sqliteStore(db);
      const checkpointer = store.checkpointer;
      assert.ok(checkpointer !== undefined);
      // Past the store's threshold (4,000 frames): the worker starts and checkpoints.
      db.exec('CREATE TABLE pages (n INTEGER PRIMARY KEY, filler BLOB NOT NULL)');
      writeRows(db, defaultThresholdFrames + 200);
      await until(() => checkpointer.stats().checkpoints > 0, "the store's first checkpoint");
      await store.close();
      assert.equal(store.isOpen(), false);
      // No connection is left open on the file (the worker's would hold a shared lock on it).
      const probe = new Database(file, { timeout: 0 });
      try {
        probe.pragma('locking_mode = EXCLUSIVE');
        probe.exec('BEGIN EXCLUSIVE; COMMIT');
      } finally {
        probe.close();
      }
      const inMemory = sqliteStore(openDatabase(':memory:'));
      assert.equal(inMemory.checkpointer, undefined);
      await inMemory.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
