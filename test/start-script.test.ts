/** `npm start` (scripts/start.mjs): runs the server as its child with the V8 flags of src/node-flags.ts. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { serverNodeFlagsFor } from '../src/node-flags.js';
import { eventually, isAlive, killQuietly } from './helpers/processes.js';
import { TestServer } from './helpers/server.js';

const GiB = 1024 ** 3;
const root = fileURLToPath(new URL('../../', import.meta.url));

/** The parent pid of a live process. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/**
 * The real `npm start` with a fresh data dir on a free loopback port: resolves once the server
 * listens, with the pids of the chain npm -> scripts/start.mjs -> dist/src/main.js.
 */
async function npmStart(): Promise<{ npm: number; script: number; server: number; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-npmstart-'));
  const npm = spawn('npm', ['start'], {
    cwd: root,
    env: {
      ...process.env,
      NETKEEP_START_NO_PREPARE: '1',
      API_TOKEN: 'test-token-0123456789abcdef',
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  npm.stderr.resume();
  const server = await new Promise<number>((resolve, reject) => {
    createInterface({ input: npm.stdout }).on('line', (line) => {
      if (line.includes('"event":"listening"')) resolve((JSON.parse(line) as { pid: number }).pid);
    });
    npm.once('exit', (code) => {
      reject(new Error(`npm start exited with ${code} before listening`));
    });
  });
  return { npm: npm.pid ?? 0, script: parentOf(server), server, dataDir };
}

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

  for (const [victim, signal] of [
    ['npm', 'SIGTERM'],
    ['npm', 'SIGKILL'],
    ['script', 'SIGKILL'],
  ] as const) {
    test(`${signal} to ${victim === 'npm' ? 'npm (the outermost process)' : 'scripts/start.mjs'}: nothing of the chain is left running`, async () => {
      const chain = await npmStart();
      try {
        assert.equal(parentOf(chain.script), chain.npm, 'npm -> start.mjs -> server, no shell between');
        process.kill(chain[victim], signal);
        for (const [name, pid] of Object.entries(chain).filter(([name]) => name !== 'dataDir'))
          assert.ok(await eventually(() => !isAlive(pid as number), 200), `${name} (${pid}) exited`);
      } finally {
        killQuietly([chain.server, chain.script, chain.npm]); // gone, as they should be
        rmSync(chain.dataDir, { recursive: true, force: true });
      }
    });
  }

  test('node scripts/start.mjs started in the background by a shell that exits keeps serving', async () => {
    // `nohup node scripts/start.mjs > log &`, then the terminal is closed (or a script goes on and
    // ends): the shell exits after the server started, and the start script is adopted by init.
    // That is not npm dying: the server must go on.
    const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-bgstart-'));
    const log = join(dataDir, 'start.log');
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env))
      if (value !== undefined && !name.startsWith('npm_')) env[name] = value; // not run by npm
    Object.assign(env, {
      NETKEEP_START_NO_PREPARE: '1',
      API_TOKEN: 'test-token-0123456789abcdef',
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
    });
    const shell = spawn(
      'sh',
      [
        '-c',
        // Waits for the server, 30 s at most: a server that never starts fails the test below.
        `node scripts/start.mjs > '${log}' 2>&1 & n=0; until grep -q '"listening"' '${log}' || [ $n -ge 300 ]; do sleep 0.1; n=$((n+1)); done`,
      ],
      { cwd: root, env },
    );
    await new Promise((resolve) => shell.once('exit', resolve));
    let server = 0;
    let script = 0;
    try {
      assert.ok(
        await eventually(
          () => existsSync(log) && readFileSync(log, 'utf8').includes('"event":"listening"'),
          200,
        ),
        'the server started',
      );
      const listening = readFileSync(log, 'utf8')
        .split('\n')
        .find((line) => line.includes('"event":"listening"'));
      const { pid, port } = JSON.parse(listening ?? '{}') as { pid: number; port: number };
      server = pid;
      script = parentOf(server);
      // The shell that started the script has exited: the script's parent changed.
      await new Promise((resolve) => setTimeout(resolve, 1500)); // three rounds of its parent check
      assert.ok(isAlive(script), `the start script still runs:\n${readFileSync(log, 'utf8')}`);
      assert.ok(isAlive(server), `the server still runs:\n${readFileSync(log, 'utf8')}`);
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      assert.equal(health.status, 200);
      process.kill(script, 'SIGTERM');
      assert.ok(
        await eventually(() => !isAlive(server) && !isAlive(script), 200),
        'SIGTERM still stops both',
      );
    } finally {
      killQuietly([server, script].filter((p) => p > 0)); // gone, as they should be
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('flags: 512 MiB old generation, or less on a small machine; NODE_OPTIONS wins', () => {
    assert.deepEqual(serverNodeFlagsFor('', 24 * GiB), [
      '--max-semi-space-size=8',
      '--max-old-space-size=512',
    ]);
    assert.deepEqual(serverNodeFlagsFor('', 1 * GiB), [
      '--max-semi-space-size=8',
      '--max-old-space-size=256',
    ]);
    assert.deepEqual(serverNodeFlagsFor('--max-old-space-size=4096', 24 * GiB), ['--max-semi-space-size=8']);
    assert.deepEqual(serverNodeFlagsFor('--max_semi_space_size=16 --enable-source-maps', 24 * GiB), [
      '--max-old-space-size=512',
    ]);
  });
});
