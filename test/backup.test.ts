/** `npm run backup`: a consistent copy of the database, made while the server runs and writes. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { TestServer } from './helpers/server.js';

const script = fileURLToPath(new URL('../../scripts/backup.mjs', import.meta.url));

test('npm run backup copies a running server database; it never overwrites', async () => {
  const server = await TestServer.start();
  try {
    for (let i = 0; i < 20; i++) {
      const mac = `aa:00:00:00:01:${i.toString(16).padStart(2, '0')}`;
      const res = await server.request('POST', `/device/${mac}`, {
        body: { createNew: true, devName: `d${i}` },
      });
      assert.equal(res.status, 200);
    }
    const target = join(server.dataDir, 'copy', 'netkeep-backup.db');
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', DATA_DIR: server.dataDir };
    const run = spawnSync(process.execPath, [script, target], { env, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim().split('\n').at(-1), target);
    const copy = new Database(target, { readonly: true });
    try {
      assert.equal(copy.prepare('PRAGMA integrity_check').pluck().get(), 'ok');
      assert.equal(copy.prepare('SELECT COUNT(*) FROM Devices').pluck().get(), 20);
    } finally {
      copy.close();
    }
    const again = spawnSync(process.execPath, [script, target], { env, encoding: 'utf8' });
    assert.equal(again.status, 2);
    assert.match(again.stderr, /exists; not overwriting/);
    assert.equal((await server.request('GET', '/devices')).json.total, 20, 'the server kept running');
  } finally {
    await server.stop();
  }
});
