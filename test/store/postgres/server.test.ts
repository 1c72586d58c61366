/**
 * The private PostgreSQL of the tests (test/helpers/postgres.ts): it starts on a loopback port,
 * takes the password of its URL (and only that), and stop() ends the server and removes its files.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { test } from 'node:test';
import pg from 'pg';
import { postgresMissing, startPostgres } from '../../helpers/postgres.js';
import { requireAll, skipUnlessCi } from '../../helpers/requirements.js';

const skip = skipUnlessCi(postgresMissing(), 'PostgreSQL tests');

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
}

test(
  'a private PostgreSQL starts, answers on its URL with its password only, and is gone after stop()',
  { skip },
  async () => {
    requireAll(postgresMissing());
    const server = await startPostgres();
    let stopped = false;
    try {
      assert.match(server.url, /^postgres:\/\/netkeep:[^@]+@127\.0\.0\.1:\d+\/netkeep$/);
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      const { rows } = await client.query<{ db: string; user: string; addr: string }>(
        'SELECT current_database() AS db, current_user AS user, inet_server_addr()::text AS addr',
      );
      await client.end();
      assert.deepEqual(rows, [{ db: 'netkeep', user: 'netkeep', addr: '127.0.0.1/32' }]);

      const wrong = new pg.Client({
        connectionString: server.url.replace(server.password, 'not-the-password'),
      });
      await assert.rejects(wrong.connect(), /password authentication failed/);

      assert.equal(existsSync(server.dir), true);

      await server.stop();
      stopped = true;
      assert.equal(await portOpen(server.port), false, 'nothing listens on the port after stop()');
      assert.equal(existsSync(server.dir), false, 'its directory is removed');
    } finally {
      if (!stopped) await server.stop();
    }
  },
);
