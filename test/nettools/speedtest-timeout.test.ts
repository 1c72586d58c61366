/**
 * SPEEDTEST_TIMEOUT_MS shorter than a phase of the builtin test: the answer is the documented 504,
 * not a 200 whose cut phases read as 0 Mbit/s. Against the speed stand-in on loopback.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { speedServerScript } from '../helpers/speedserver.js';
import { TestServer } from '../helpers/server.js';

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return typeof address === 'object' && address !== null ? address.port : 0;
}

describe('builtin speed test past SPEEDTEST_TIMEOUT_MS', () => {
  let standIn: ChildProcess;
  let server: TestServer;
  let downloads = 0;

  before(async () => {
    const port = await freePort();
    standIn = spawn(
      process.execPath,
      ['-e', speedServerScript.replace("'0.0.0.0'", "'127.0.0.1'"), String(port)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const lines = createInterface({ input: standIn.stdout ?? process.stdin });
    await new Promise<void>((resolve) => {
      lines.on('line', (line) => {
        if (line === 'listening') resolve();
        if (line.startsWith('down ') && line !== 'down 0') downloads++;
      });
    });
    server = await TestServer.start({
      env: {
        SPEEDTEST_BACKEND: 'builtin',
        SPEEDTEST_SERVER_URL: `http://127.0.0.1:${port}`,
        SPEEDTEST_STREAMS: '2',
        SPEEDTEST_DURATION_MS: '5000',
        SPEEDTEST_TIMEOUT_MS: '1500',
      },
    });
  });
  after(async () => {
    await server.stop();
    standIn.kill();
  });

  test('the limit falls inside the download phase: 504 Tool timed out', async () => {
    const res = await server.request('GET', '/nettools/speedtest');
    assert.equal(res.status, 504, res.text);
    assert.deepEqual(
      { success: res.json.success, error: res.json.error },
      { success: false, error: 'Tool timed out' },
    );
    assert.match(String(res.json.message), /1500 ms/);
    assert.ok(downloads > 0, 'the download phase had started');
  });
});
