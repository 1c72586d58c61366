/**
 * Speed test. builtin: against a stand-in server on a test-LAN host whose link is shaped with tc to
 * 50 Mbit/s. speedtest-cli: the real tool, run inside a namespace that has only loopback and a
 * resolv.conf pointing at 127.0.0.1, so it fails as it would without internet and cannot reach
 * anything (not even the system resolver).
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { speedServerScript } from '../helpers/speedserver.js';
import { createTestLan, testLanSkipReason, type LanProcess, type TestLan } from '../helpers/testlan.js';
import { TestServer } from '../helpers/server.js';
import { openSse } from '../helpers/sse.js';
import { nextToolRun } from '../helpers/toolruns.js';

const skip = testLanSkipReason('speedtest tests');

const limitMbit = 50;

describe('GET /nettools/speedtest', { skip }, () => {
  let lan: TestLan;
  let standIn: LanProcess;
  let builtin: TestServer;
  let cli: TestServer;
  let toolDir: string;

  // What `before` started, stopped in reverse by `after`: even when `before` fails half-way, or the
  // test LAN's processes would keep this file's process alive.
  const started: (() => Promise<unknown>)[] = [];

  before(async () => {
    lan = await createTestLan({ hosts: 1, far: false });
    started.push(() => lan.destroy());
    const host = lan.hosts.get('h1');
    assert.ok(host);
    standIn = lan.node(host.ns, speedServerScript, ['8080']);
    await standIn.waitForLine(/^listening$/);
    await lan.rateLimit(host, limitMbit);
    const isolated = await lan.isolatedNamespace('nameserver 127.0.0.1\n');
    toolDir = mkdtempSync(join(tmpdir(), 'netkeep-speedtest-cli-'));
    started.push(async () => {
      rmSync(toolDir, { recursive: true, force: true });
    });
    // The real speedtest-cli, run inside the isolated namespace.
    writeFileSync(
      join(toolDir, 'speedtest-cli'),
      `#!/bin/sh\nexec /usr/sbin/ip netns exec ${isolated} /usr/bin/speedtest-cli "$@"\n`,
    );
    chmodSync(join(toolDir, 'speedtest-cli'), 0o755);
    [builtin, cli] = await Promise.all([
      TestServer.start({
        env: {
          SPEEDTEST_BACKEND: 'builtin',
          SPEEDTEST_SERVER_URL: `http://${host.ip}:8080`,
          SPEEDTEST_STREAMS: '4',
          SPEEDTEST_DURATION_MS: '4000',
        },
      }),
      TestServer.start({
        env: { SPEEDTEST_BACKEND: 'auto', TOOL_PATH: toolDir, SPEEDTEST_TIMEOUT_MS: '30000' },
      }),
    ]);
    started.push(
      () => builtin.stop(),
      () => cli.stop(),
    );
  });
  after(async () => {
    for (const stop of started.reverse()) await stop();
  });

  test('builtin: two concurrent requests share one test, measuring the 50 Mbit/s link within 15%', async (t) => {
    const [first, second] = await Promise.all([
      builtin.request('GET', '/nettools/speedtest'),
      builtin.request('GET', '/nettools/speedtest'),
    ]);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(second.body, first.body, 'both got the same result');
    const pings = standIn.lines.filter((line) => line === 'down 0').length;
    assert.equal(pings, 6, 'one test ran: one warm-up and 5 latency samples');
    const result = first.json.result as { pingMs: number; downloadMbps: number; uploadMbps: number };
    assert.deepEqual(first.json.output, [
      `Ping: ${result.pingMs} ms`,
      `Download: ${result.downloadMbps} Mbit/s`,
      `Upload: ${result.uploadMbps} Mbit/s`,
    ]);
    t.diagnostic(`measured: ${JSON.stringify(result)}`);
    assert.ok(result.pingMs >= 0);
    for (const [name, value] of [
      ['download', result.downloadMbps],
      ['upload', result.uploadMbps],
    ] as const) {
      assert.ok(
        Math.abs(value - limitMbit) <= limitMbit * 0.15,
        `${name} ${value} Mbit/s is within 15% of ${limitMbit}`,
      );
    }
  });

  test('a later request starts a new test', async () => {
    const before = standIn.lines.filter((line) => line === 'down 0').length;
    const res = await builtin.request('GET', '/nettools/speedtest');
    assert.equal(res.status, 200);
    assert.equal(standIn.lines.filter((line) => line === 'down 0').length, before + 6);
  });

  test('speedtest-cli (auto picks it when installed) without internet: 500 with details', async () => {
    const res = await cli.request('GET', '/nettools/speedtest');
    assert.equal(res.status, 500);
    assert.equal(res.json.error, 'Command failed');
    assert.match(String(res.json.details), /Cannot retrieve speedtest configuration/);
    const run = await nextToolRun(cli, 0);
    assert.equal(run.tool, 'speedtest-cli');
    // Without --simple: speedtest-cli then prints each phase as it ends (streamed progress).
    assert.deepEqual(run.args, ['--secure']);
  });

  test('speedtest-cli streamed without internet: event: error with the same 500 body plus status', async () => {
    const stream = await openSse(cli, 'GET', '/nettools/speedtest');
    assert.equal(stream.status, 200);
    await stream.done;
    assert.deepEqual(
      stream.messages.map((m) => m.event),
      ['error'],
    );
    const error = stream.messages[0]?.json ?? {};
    assert.equal(error.status, 500);
    assert.equal(error.error, 'Command failed');
    assert.match(String(error.details), /Cannot retrieve speedtest configuration/);
  });
});

describe('builtin speed test server failures', () => {
  test('a server that cannot be reached is 500 with details', async () => {
    const server = await TestServer.start({
      env: { SPEEDTEST_BACKEND: 'builtin', SPEEDTEST_SERVER_URL: 'http://127.0.0.1:9' },
    });
    try {
      const res = await server.request('GET', '/nettools/speedtest');
      assert.equal(res.status, 500);
      assert.match(String(res.json.details), /ECONNREFUSED/);
    } finally {
      await server.stop();
    }
  });
});
