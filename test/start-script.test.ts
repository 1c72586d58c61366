/** `npm start` (scripts/start.mjs): runs the server as its child with the V8 flags of src/node-flags.ts. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { serverNodeFlags, serverNodeFlagsFor } from '../src/node-flags.js';
import { eventually, isAlive } from './helpers/processes.js';
import { TestServer } from './helpers/server.js';

describe('npm start', () => {
  test('runs the server as its child, with the server flags on its node command line; SIGTERM stops both', async () => {
    const server = await TestServer.start({ viaStartScript: true });
    const listening = server.logs.find((line) => line.includes('"event":"listening"'));
    const pid = Number((JSON.parse(listening ?? '{}') as { pid?: number }).pid);
    assert.ok(pid > 0 && pid !== server.process.pid, 'the server is a child of the start script');
    const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    for (const flag of serverNodeFlags)
      assert.ok(commandLine.includes(flag), `${flag} in ${commandLine.join(' ')}`);
    assert.equal((await server.request('GET', '/health', { token: null })).status, 200);
    assert.equal(await server.stop(), 0);
    assert.ok(await eventually(() => !isAlive(pid)), 'the server exited with the start script');
  });

  test("an operator's NODE_OPTIONS setting of a flag wins", () => {
    assert.deepEqual(serverNodeFlagsFor(''), serverNodeFlags);
    assert.deepEqual(serverNodeFlagsFor('--max-old-space-size=4096'), ['--max-semi-space-size=4']);
    assert.deepEqual(serverNodeFlagsFor('--max_semi_space_size=16 --enable-source-maps'), [
      '--max-old-space-size=1024',
    ]);
  });
});
