/**
 * Group commit: writes that arrive together share one transaction, a failing write fails alone, and
 * (against the real server, killed with SIGKILL while concurrent writers run) every write that was
 * answered 200 is in the database after a restart.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openDatabase, type Database } from '../../src/db/connection.js';
import type { Statement } from 'better-sqlite3';
import { GroupCommit } from '../../src/db/group-commit.js';
import { WalSync } from '../../src/db/wal-sync.js';
import { TestServer } from '../helpers/server.js';

/** A fresh database with a table `t (n)`, given to `use` with an insert; removed afterwards. */
async function withTable(use: (db: Database, insert: Statement<[number]>) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'netkeep-group-'));
  const db = openDatabase(join(dir, 'netkeep.db'));
  try {
    db.exec('CREATE TABLE t (n INTEGER NOT NULL)');
    await use(db, db.prepare<[number]>('INSERT INTO t (n) VALUES (?)'));
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('group commit', () => {
  test('writes queued in one turn share one commit; one that throws is rolled back alone', async () => {
    await withTable(async (db, insert) => {
      // Early groups (below) would commit the first 16 at once.
      const commits = new GroupCommit(db, { earlyGroup: 100 });
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          commits.run(() => {
            insert.run(i);
            if (i === 7) throw new Error('write 7 fails after its insert');
            return i;
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        results.map((_, i) => (i === 7 ? 'rejected' : 'fulfilled')),
      );
      assert.deepEqual(
        db.prepare('SELECT n FROM t ORDER BY n').pluck().all(),
        Array.from({ length: 20 }, (_, i) => i).filter((i) => i !== 7),
      );
      assert.deepEqual(commits.stats(), { commits: 1, writes: 20 });
      // A write queued later gets its own commit.
      assert.equal(await commits.run(() => insert.run(99).changes), 1);
      assert.deepEqual(commits.stats(), { commits: 2, writes: 21 });
    });
  });

  test('a write is answered only after its flush to disk; a failed flush fails the group', async () => {
    await withTable(async (db, insert) => {
      let release: (() => void) | undefined;
      let fail: ((error: Error) => void) | undefined;
      let flushes = 0;
      const commits = new GroupCommit(db, {
        flush: () =>
          new Promise<void>((resolve, reject) => {
            flushes++;
            release = resolve;
            fail = reject;
          }),
      });
      let answered = false;
      const first = commits
        .run(() => insert.run(1))
        .then(() => {
          answered = true;
        });
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Committed (visible on the connection) but not flushed: not answered yet.
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 1);
      assert.equal(answered, false);
      // Asserted, not skipped: without a flush call, `await first` would wait forever.
      assert.equal(flushes, 1, 'the committed group was handed to flush');
      release?.();
      await first;
      assert.equal(answered, true);

      const failing = Promise.allSettled([
        commits.run(() => insert.run(2)),
        commits.run(() => insert.run(3)),
      ]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(flushes, 2, 'the second group was handed to flush');
      fail?.(new Error('EIO'));
      assert.deepEqual(
        (await failing).map((r) => r.status),
        ['rejected', 'rejected'],
      );
      // The pragma is back to FULL for every other writer on the connection.
      assert.equal(db.pragma('synchronous', { simple: true }), 2);
      // After a failed flush no write is taken: a later flush could succeed without the lost frames.
      await assert.rejects(
        commits.run(() => insert.run(4)),
        /restart netkeep/,
      );
      assert.equal(db.prepare('SELECT count(*) FROM t WHERE n = 4').pluck().get(), 0);
    });
  });

  test('an error that rolls back the whole transaction fails the whole group; no write after it runs alone', async () => {
    await withTable(async (db, insert) => {
      const commits = new GroupCommit(db);
      const results = await Promise.allSettled([
        commits.run(() => insert.run(1)),
        // As SQLite does on a full disk or an I/O error: the whole transaction is rolled back.
        commits.run(() => {
          db.exec('ROLLBACK');
          throw new Error('disk full');
        }),
        commits.run(() => insert.run(3)),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['rejected', 'rejected', 'rejected'],
      );
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 0, 'nothing of the group was kept');
      // The next group works.
      assert.equal(await commits.run(() => insert.run(5).changes), 1);
    });
  });

  test('with no flush pending, a full early group commits at once; no write is answered before its flush', async () => {
    await withTable(async (db, insert) => {
      const releases: (() => void)[] = [];
      const commits = new GroupCommit(db, {
        earlyGroup: 4,
        flush: () =>
          new Promise<void>((resolve) => {
            releases.push(resolve);
          }),
      });
      const answered: number[] = [];
      const writes = Array.from({ length: 6 }, (_, i) =>
        commits
          .run(() => insert.run(i))
          .then(() => {
            answered.push(i);
          }),
      );
      // The fourth write filled the group: committed and handed to its flush before the turn ended.
      assert.deepEqual(commits.stats(), { commits: 1, writes: 4 });
      assert.equal(releases.length, 1);
      await new Promise((resolve) => setImmediate(resolve));
      // The rest of the turn, at its end, while the first group's flush runs.
      assert.deepEqual(commits.stats(), { commits: 2, writes: 6 });
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 6);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.deepEqual(answered, [], 'committed but not flushed: nothing answered');
      // Each group is answered by its own flush, never by another's.
      releases[1]?.();
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.deepEqual(answered, [4, 5]);
      releases[0]?.();
      await Promise.all(writes);
      assert.deepEqual(
        answered.sort((a, b) => a - b),
        [0, 1, 2, 3, 4, 5],
      );
    });
  });

  test('while a group waits for its flush, or inside a transaction, the writes of a turn make one group', async () => {
    await withTable(async (db, insert) => {
      const releases: (() => void)[] = [];
      const releaseAll = (): void => {
        for (const release of releases.splice(0)) release();
      };
      const commits = new GroupCommit(db, {
        earlyGroup: 4,
        flush: () =>
          new Promise<void>((resolve) => {
            releases.push(resolve);
          }),
      });
      const first = commits.run(() => insert.run(0));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(commits.stats(), { commits: 1, writes: 1 });
      const waiting = Array.from({ length: 6 }, (_, i) => commits.run(() => insert.run(i + 1)));
      assert.deepEqual(commits.stats(), { commits: 1, writes: 1 }, 'no early group while a flush is pending');
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(commits.stats(), { commits: 2, writes: 7 });
      releaseAll();
      await Promise.all([first, ...waiting]);

      // Queued from inside a transaction of the connection: committed after it, on their own.
      const inside: Promise<unknown>[] = [];
      db.transaction(() => {
        for (let i = 0; i < 6; i++) inside.push(commits.run(() => insert.run(100 + i)));
      })();
      assert.deepEqual(commits.stats(), { commits: 2, writes: 7 });
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(commits.stats(), { commits: 3, writes: 13 });
      releaseAll();
      await Promise.all(inside);
    });
  });

  test('a write that throws in an early group is rolled back alone', async () => {
    await withTable(async (db, insert) => {
      const commits = new GroupCommit(db, { earlyGroup: 4 });
      const writes = Array.from({ length: 4 }, (_, i) =>
        commits.run(() => {
          insert.run(i);
          if (i === 1) throw new Error('write 1 fails after its insert');
          return i;
        }),
      );
      assert.deepEqual(commits.stats(), { commits: 1, writes: 4 }, 'committed at once, as one group');
      const results = await Promise.allSettled(writes);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      assert.deepEqual(db.prepare('SELECT n FROM t ORDER BY n').pluck().all(), [0, 2, 3]);
    });
  });

  test('paused, queued writes wait for resume (early groups too); the event loop goes on meanwhile', async () => {
    await withTable(async (db, insert) => {
      const commits = new GroupCommit(db, { earlyGroup: 4 });
      commits.pause();
      const writes = Array.from({ length: 6 }, (_, i) => commits.run(() => insert.run(i)));
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 0);
      assert.deepEqual(commits.stats(), { commits: 0, writes: 0 });
      commits.resume();
      await Promise.all(writes);
      assert.deepEqual(commits.stats(), { commits: 1, writes: 6 });
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 6);
    });
  });

  test('WalSync: callers during a running flush share the next one', async () => {
    await withTable(async (db) => {
      const wal = new WalSync(db);
      const first = wal.sync();
      // Arriving while the first runs: one more flush for all of them, not one each.
      const later = Array.from({ length: 10 }, () => wal.sync());
      await Promise.all([first, ...later]);
      assert.equal(wal.count, 2);
      await wal.sync();
      assert.equal(wal.count, 3);
    });
  });

  test('kill -9 under concurrent writers: every write answered 200 is there after a restart', async () => {
    const server = await TestServer.start();
    const dataDir = server.dataDir;
    const writers = 24;
    const perWriter = 8;
    /** Per MAC, the highest devComments counter answered 200 (creates count as 0). */
    const acknowledged = new Map<string, number>();
    let stop = false;
    const macOf = (writer: number, i: number): string =>
      `02:9c:00:00:${writer.toString(16).padStart(2, '0')}:${i.toString(16).padStart(2, '0')}`;
    const writer = async (w: number): Promise<void> => {
      let counter = 0;
      for (let i = 0; !stop; i++) {
        const mac = macOf(w, i % perWriter);
        try {
          if (!acknowledged.has(mac)) {
            const res = await server.request('POST', `/device/${mac}`, {
              body: { createNew: true, devComments: '0' },
            });
            if (res.status === 200) acknowledged.set(mac, 0);
          } else {
            counter++;
            const res = await server.request('POST', `/device/${mac}/update-column`, {
              body: { columnName: 'devComments', columnValue: String(counter) },
            });
            if (res.status === 200) acknowledged.set(mac, counter);
          }
        } catch {
          return; // the server is gone
        }
      }
    };
    const running = Array.from({ length: writers }, (_, w) => writer(w));
    // Kill once a good number of writes has been answered, while the writers are still going.
    while ([...acknowledged.values()].reduce((a, b) => a + b + 1, 0) < 1500)
      await new Promise((resolve) => setTimeout(resolve, 20));
    await server.kill();
    stop = true;
    await Promise.all(running);

    const restarted = await TestServer.start({ dataDir });
    try {
      let writes = 0;
      for (const [mac, counter] of acknowledged) {
        const res = await restarted.request('GET', `/device/${mac}`);
        assert.equal(res.status, 200, `${mac} was created with a 200 answer`);
        // Each writer writes its MACs in turn and waits for each answer, so a later write may
        // have landed without its answer; never an earlier one.
        assert.ok(
          Number(res.json.devComments) >= counter,
          `${mac}: devComments ${String(res.json.devComments)}, acknowledged ${counter}`,
        );
        writes += counter + 1;
      }
      assert.ok(writes >= 1500, `${writes} acknowledged writes checked`);
    } finally {
      await restarted.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
