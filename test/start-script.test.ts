/** `npm start` (scripts/start.mjs): runs the server as its child with the V8 flags of src/node-flags.ts. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { describe, test } from 'node:test';
import { serverNodeFlagsFor } from '../src/node-flags.js';
import { eventually, isAlive } from './helpers/processes.js';
import { TestServer } from './helpers/server.js';

const GiB = 1024 ** 3;

describe('npm start', () => {
  test('runs the server as its child, with the server flags on its node command line; SIGTERM stops both', async () => {
    const server = await TestServer.start({ viaStartScript: true });
    let pid = 0;
    try {
      const listening = server.logs.find((line) => line.includes('"event":"listening"'));
      pid = Number((JSON.parse(listening ?? '{}') as { pid?: number }).pid);
      assert.ok(pid > 0 && pid !== server.process.pid, 'the server is a child of the start script');
      const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const flags = serverNodeFlagsFor('', totalmem());
      assert.equal(flags.length, 2);
      for (const flag of flags) assert.ok(commandLine.includes(flag), `${flag} in ${commandLine.join(' ')}`);
      assert.equal((await server.request('GET', '/health', { token: null })).status, 200);
    } finally {
      assert.equal(await server.stop(), 0, 'SIGTERM forwarded: a clean stop');
    }
    assert.ok(await eventually(() => !isAlive(pid)), 'the server exited with the start script');
  });

  test('a server killed by another signal is a failure of npm start (128 + signal)', async () => {
    const server = await TestServer.start({ viaStartScript: true });
    const listening = server.logs.find((line) => line.includes('"event":"listening"'));
    const pid = Number((JSON.parse(listening ?? '{}') as { pid?: number }).pid);
    assert.ok(pid > 0);
    process.kill(pid, 'SIGKILL');
    assert.equal(await server.stop(), 137);
  });

  test('flags: 512 MiB old generation, or less on a small machine; NODE_OPTIONS wins', () => {
    assert.deepEqual(serverNodeFlagsFor('', 24 * GiB), [
      '--max-semi-space-size=2',
      '--max-old-space-size=512',
    ]);
    assert.deepEqual(serverNodeFlagsFor('', 1 * GiB), [
      '--max-semi-space-size=2',
      '--max-old-space-size=256',
    ]);
    assert.deepEqual(serverNodeFlagsFor('--max-old-space-size=4096', 24 * GiB), ['--max-semi-space-size=2']);
    assert.deepEqual(serverNodeFlagsFor('--max_semi_space_size=16 --enable-source-maps', 24 * GiB), [
      '--max-old-space-size=512',
    ]);
  });
});
