/**
 * The PostgreSQL store's connection: its URL (sslmode honoured, mistakes named without the
 * password), and a store that cannot be reached (nothing listening, a wrong password, TLS the
 * server does not offer, a server stopped under an open pool) reported as 503 STORE_UNAVAILABLE
 * naming host:port/db; the password is in no message, answer body or log line.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { DomainError } from '../../../src/errors.js';
import { errorResponse } from '../../../src/http/errors.js';
import {
  openPostgres,
  parseStoreUrl,
  PostgresPool,
  redactStoreUrl,
} from '../../../src/store/postgres/pool.js';
import { postgresMissing, startPostgres, type PostgresServer } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL connection tests');
const secret = 'pw-Zq7$secret';

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
  });
}

/** Asserts `err` is STORE_UNAVAILABLE naming `label`, as a 503 body, with the password nowhere. */
function assertUnavailable(err: unknown, label: string, password: string): true {
  assert.ok(err instanceof DomainError, `a DomainError, not ${String(err)}`);
  assert.equal(err.code, 'STORE_UNAVAILABLE');
  assert.match(err.message, new RegExp(`PostgreSQL at ${label.replace(/[.]/g, '\\.')}`));
  const response = errorResponse(err);
  assert.equal(response.status, 503);
  assert.equal((response.body as { code?: string }).code, 'STORE_UNAVAILABLE');
  const everything = `${err.message} ${err.stack ?? ''} ${JSON.stringify(response.body)}`;
  assert.ok(!everything.includes(password), 'the password is in no message or answer');
  assert.ok(!everything.includes(encodeURIComponent(password)));
  return true;
}

test('a store URL: host, port, database, user and sslmode; the password kept apart', () => {
  const c = parseStoreUrl(
    `postgres://net%20keep:${encodeURIComponent(secret)}@db.example:6543/inventory?sslmode=require`,
  );
  assert.deepEqual(c, {
    host: 'db.example',
    port: 6543,
    database: 'inventory',
    user: 'net keep',
    password: secret,
    sslmode: 'require',
    label: 'db.example:6543/inventory',
  });
  assert.equal(parseStoreUrl('postgresql://u@[::1]/d').host, '::1');
  assert.equal(parseStoreUrl('postgresql://u@[::1]/d').port, 5432);
  assert.equal(parseStoreUrl('postgres://u@h/d').sslmode, 'disable');
  for (const [url, message] of [
    [`mysql://u:${secret}@h/d`, /scheme 'mysql:'/],
    [`postgres://u:${secret}@h/`, /names no database/],
    [`postgres://:${secret}@h/d`, /names no user/],
    [`postgres://u:${secret}@h/d?sslmode=sometimes`, /sslmode=sometimes/],
    [`postgres://u:${secret}@h/d?options=-c`, /parameter 'options'/],
    ['not a url', /is not a URL/],
  ] as const) {
    assert.throws(
      () => parseStoreUrl(url),
      (err: Error) => message.test(err.message) && !err.message.includes(secret),
      url,
    );
  }
  assert.equal(redactStoreUrl(`postgres://u:${secret}@h:1/d`), 'postgres://u:****@h:1/d');
});

test('nothing listening: STORE_UNAVAILABLE naming host:port/db, without the password', async () => {
  const port = await closedPort();
  await assert.rejects(
    openPostgres(`postgres://netkeep:${encodeURIComponent(secret)}@127.0.0.1:${port}/netkeep`, {
      connectionTimeoutMs: 2000,
    }),
    (err) => assertUnavailable(err, `127.0.0.1:${port}/netkeep`, secret),
  );
});

describe('a real PostgreSQL', { skip }, () => {
  let server: PostgresServer;
  before(async () => {
    requireAll(postgresMissing());
    server = await startPostgres();
  });
  after(async () => {
    await server.stop();
  });
  const label = (): string => `127.0.0.1:${server.port}/netkeep`;

  test('a wrong password: STORE_UNAVAILABLE, naming neither password', async () => {
    const url = server.url.replace(server.password, encodeURIComponent(secret));
    await assert.rejects(openPostgres(url), (err) => assertUnavailable(err, label(), secret));
  });

  test('sslmode=require is honoured: a server without TLS is refused, not used in plain text', async () => {
    await assert.rejects(openPostgres(`${server.url}?sslmode=require`), (err) => {
      assertUnavailable(err, label(), server.password);
      assert.match((err as Error).message, /SSL/i);
      return true;
    });
  });

  test('afterCommit: called once the transaction has committed (another connection sees its rows), never after a rollback', async () => {
    const store = await openPostgres(server.url);
    try {
      await store.query('CREATE TABLE after_commit_probe (n int)');
      const seen: number[] = [];
      const look = (): void => {
        // Read on another connection of the pool, as the alert delivery loop does.
        void store.query<{ c: string }>('SELECT count(*) AS c FROM after_commit_probe').then((rows) => {
          seen.push(Number(rows[0]?.c));
        });
      };
      await store.transaction(async (client) => {
        await client.query('INSERT INTO after_commit_probe VALUES (1)');
        store.afterCommit(client, look);
        assert.deepEqual(seen, [], 'not before the COMMIT');
      });
      await assert.rejects(
        store.transaction(async (client) => {
          await client.query('INSERT INTO after_commit_probe VALUES (2)');
          store.afterCommit(client, look);
          throw new Error('rolled back');
        }),
      );
      // The next transaction on the same connection does not inherit the rolled-back one's callback.
      await store.transaction(async (client) => {
        await client.query('SELECT 1');
      });
      for (let i = 0; i < 100 && seen.length < 1; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(seen, [1]);
    } finally {
      await store.query('DROP TABLE IF EXISTS after_commit_probe');
      await store.close();
    }
  });

  test('a server stopped in the middle of a transaction: it rejects STORE_UNAVAILABLE and the process lives on', async () => {
    const lines: string[] = [];
    const store = new PostgresPool(server.url, {
      connectionTimeoutMs: 2000,
      log: {
        warn(fields, message) {
          lines.push(JSON.stringify({ ...fields, message }));
        },
      },
    });
    try {
      let inside: () => void = () => undefined;
      const started = new Promise<void>((resolve) => (inside = resolve));
      // The connection is checked out (no pool listener on it) when the server goes: its 'error'
      // event, unhandled, would end this process and the test with it.
      const running = store.transaction(async (client) => {
        inside();
        return client.query('SELECT pg_sleep(30)');
      });
      // Its outcome is taken at once: it settles while the server stops.
      const outcome = running.then(
        () => undefined,
        (err: unknown) => err,
      );
      await started;
      await new Promise((resolve) => setTimeout(resolve, 200));
      await server.down();
      assertUnavailable(await outcome, label(), server.password);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await server.up();
      const [row] = await store.query<{ one: number }>('SELECT 1::bigint AS one');
      assert.deepEqual({ ...row }, { one: 1 }, 'the pool connects again by itself');
      for (const line of lines) assert.ok(!line.includes(server.password), line);
    } finally {
      await store.close();
    }
  });

  test('a server stopped under an open pool: queries answer STORE_UNAVAILABLE; no log line has the password', async () => {
    const lines: string[] = [];
    const store = new PostgresPool(server.url, {
      connectionTimeoutMs: 2000,
      log: {
        warn(fields, message) {
          lines.push(JSON.stringify({ ...fields, message }));
        },
      },
    });
    try {
      const [row] = await store.query<{ one: number }>('SELECT 1::bigint AS one');
      assert.deepEqual({ ...row }, { one: 1 }, 'int8 comes back as a number');
      // Keep an idle connection in the pool, so that the server's going away is noticed there.
      await server.stop();
      await assert.rejects(store.query('SELECT 1'), (err) =>
        assertUnavailable(err, label(), server.password),
      );
      await assert.rejects(
        store.transaction(async (client) => client.query('SELECT 1')),
        (err) => assertUnavailable(err, label(), server.password),
      );
      for (const line of lines) assert.ok(!line.includes(server.password), line);
    } finally {
      await store.close();
    }
  });
});
