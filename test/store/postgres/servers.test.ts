/**
 * Several servers on one PostgreSQL database: change messages through LISTEN/NOTIFY (delivered
 * on commit, never on rollback, not to their sender, a resync when too large or after the
 * listener's connection was lost), and one holder at a time of a job's advisory lock (freed when
 * its holder's connection dies, and taken by a server standing by).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PostgresLeaderLock } from '../../../src/store/postgres/leader.js';
import { PostgresChangeChannel, type RemoteChange } from '../../../src/store/postgres/notify.js';
import { openPostgres, type PostgresPool } from '../../../src/store/postgres/pool.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL multi-server tests');

/** The changes a channel reported, and a way to wait for the next. */
function inbox(): {
  changes: RemoteChange[];
  next: () => Promise<RemoteChange>;
  push: (c: RemoteChange) => void;
} {
  const changes: RemoteChange[] = [];
  const waiting: ((c: RemoteChange) => void)[] = [];
  let read = 0;
  return {
    changes,
    push(change) {
      changes.push(change);
      const waiter = waiting.shift();
      if (waiter !== undefined) {
        read++;
        waiter(change);
      }
    },
    next() {
      if (read < changes.length) return Promise.resolve(changes[read++] as RemoteChange);
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}

async function terminateSessions(
  store: PostgresPool,
  applicationLike: string,
  except?: number,
): Promise<number> {
  const rows = await store.query<{ n: number }>(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> coalesce($2, 0) AND query LIKE $1`,
    [applicationLike, except ?? null],
  );
  return rows[0]?.n ?? 0;
}

/** Polls `check` until true (bounded); the assertions that follow state what must hold. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((resolve) => setTimeout(resolve, 25));
}

describe('servers sharing one PostgreSQL database', { skip }, () => {
  let server: PostgresServer;
  let a: PostgresPool;
  let b: PostgresPool;

  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
    a = await openPostgres(server.url);
    b = await openPostgres(server.url);
  });
  after(async () => {
    await a.close();
    await b.close();
    await server.stop();
  });

  test('a change is heard by the other servers on commit, never on rollback, and not by its sender', async () => {
    const heardByA = inbox();
    const heardByB = inbox();
    const channelA = new PostgresChangeChannel(a, { serverId: 'A', onChange: heardByA.push });
    const channelB = new PostgresChangeChannel(b, { serverId: 'B', onChange: heardByB.push });
    await channelA.start();
    await channelB.start();
    try {
      await a
        .transaction(async (client) => {
          await channelA.publish({ device: 'rolled-back' }, client);
          throw new Error('roll back');
        })
        .catch(() => undefined);
      await a.transaction(async (client) => {
        await channelA.publish({ device: 'aa:00:00:00:00:01' }, client);
      });
      assert.deepEqual(await heardByB.next(), {
        kind: 'message',
        from: 'A',
        body: { device: 'aa:00:00:00:00:01' },
      });

      await channelB.publish({ device: 'aa:00:00:00:00:02' });
      assert.deepEqual(await heardByA.next(), {
        kind: 'message',
        from: 'B',
        body: { device: 'aa:00:00:00:00:02' },
      });
      // A's own message came before B's: A never heard it (its first message is B's).
      assert.equal(heardByA.changes.length, 1);

      await channelA.publish({ devices: 'x'.repeat(9000) });
      assert.deepEqual(await heardByB.next(), { kind: 'resync', from: 'A', reason: 'overflow' });
    } finally {
      await channelA.stop();
      await channelB.stop();
    }
  });

  test('a listener whose connection is cut reconnects by itself and reports a resync first', async () => {
    const heard = inbox();
    const channelB = new PostgresChangeChannel(b, { serverId: 'B', onChange: heard.push, reconnectMs: 50 });
    const channelA = new PostgresChangeChannel(a, { serverId: 'A', onChange: () => undefined });
    await channelB.start();
    try {
      assert.equal(await terminateSessions(a, 'LISTEN%'), 1, "B's listener was cut");
      assert.deepEqual(await heard.next(), { kind: 'resync', from: '', reason: 'reconnected' });
      await channelA.publish({ after: 'reconnect' });
      assert.deepEqual(await heard.next(), { kind: 'message', from: 'A', body: { after: 'reconnect' } });
    } finally {
      await channelB.stop();
    }
  });

  test('PostgreSQL down and back: STORE_UNAVAILABLE meanwhile, then the same pool and listener work again by themselves', async () => {
    const heard = inbox();
    const channelB = new PostgresChangeChannel(b, { serverId: 'B', onChange: heard.push, reconnectMs: 50 });
    await channelB.start();
    try {
      await server.down();
      await assert.rejects(
        a.query('SELECT 1'),
        (err: Error & { code?: string }) => err.code === 'STORE_UNAVAILABLE',
      );
      await server.up();
      // No new pool: its next connection is made when asked for.
      let answer: unknown;
      await until(async () => {
        answer = await a.query<{ one: number }>('SELECT 1::bigint AS one').then(
          (rows) => rows[0]?.one,
          () => undefined,
        );
        return answer === 1;
      });
      assert.equal(answer, 1);
      assert.deepEqual(await heard.next(), { kind: 'resync', from: '', reason: 'reconnected' });
      const channelA = new PostgresChangeChannel(a, { serverId: 'A', onChange: () => undefined });
      await channelA.publish({ after: 'restart' });
      assert.deepEqual(await heard.next(), { kind: 'message', from: 'A', body: { after: 'restart' } });
    } finally {
      await channelB.stop();
    }
  });

  test("one holder of a job's lock; a server standing by takes it when the holder's connection dies", async () => {
    let lost = 0;
    const lockA = new PostgresLeaderLock(a, 'scan:default', {
      onLost: () => {
        lost++;
      },
    });
    const lockB = new PostgresLeaderLock(b, 'scan:default');
    const otherSite = new PostgresLeaderLock(b, 'scan:branch-office');
    try {
      assert.equal(await lockA.tryAcquire(), true);
      assert.equal(await lockB.tryAcquire(), false, 'B stands by');
      assert.equal(await lockA.tryAcquire(), true, 'A keeps it');
      assert.equal(await otherSite.tryAcquire(), true, 'another site has its own lock');

      // A "dies": its lock connection is gone.
      const [holder] = await a.query<{ pid: number }>(
        `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = (hashtext('netkeep scan:default')::bigint & 4294967295)`,
      );
      assert.ok(holder !== undefined, 'the lock is held in the database');
      await a.query('SELECT pg_terminate_backend($1)', [holder.pid]);
      // The lock is freed when that backend has ended (terminate only signals it).
      await until(
        async () =>
          (await a.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [holder.pid])).length === 0,
      );
      assert.equal(await lockB.tryAcquire(), true, 'B takes over');
      // A learns it lost the lock, and does not get it back while B holds it.
      await until(() => Promise.resolve(lost > 0));
      assert.equal(lost, 1);
      assert.equal(lockA.held, false);
      assert.equal(await lockA.tryAcquire(), false);

      await lockB.release();
      assert.equal(await lockA.tryAcquire(), true, 'released: A takes it again');
    } finally {
      await lockA.release();
      await lockB.release();
      await otherSite.release();
    }
  });
});
