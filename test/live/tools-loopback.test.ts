/**
 * Streamed tools on loopback: the builtin speed test against a stand-in server on 127.0.0.1 (two
 * streaming clients and a plain one share one test and its progress), speedtest-cli's progress
 * lines, and the error paths: missing tool, saturated queue, the client going away (no process
 * left behind), bad input and a wrong token (still plain JSON), and the keep-alive comment.
 * A fake `nmap`/`speedtest-cli` (shell scripts in a TOOL_PATH directory) stands in where the real
 * tool would need the internet or would finish too fast to be caught running.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { eventually, isAlive, processesInGroup, waitForStartedFile } from '../helpers/processes.js';
import { notAuthorizedBody, TestServer } from '../helpers/server.js';
import { speedServerScript } from '../helpers/speedserver.js';
import { finalMessage, openSse } from '../helpers/sse.js';

const dir = mkdtempSync(join(tmpdir(), 'netkeep-live-tools-'));
const emptyDir = mkdtempSync(join(tmpdir(), 'netkeep-live-notools-'));

/** A fake nmap: prints a line, then waits (with a child) until it is killed; writes its pids. */
const fakeNmap = `#!/bin/sh
echo "Starting Nmap (fake)"
trap '' TERM
/bin/sleep 300 &
echo "$$ $!" > "${dir}/pids-$$"
/bin/mv "${dir}/pids-$$" "${dir}/started"
wait
`;

/** A fake speedtest-cli printing what the real one prints without --simple, a phase at a time. */
const fakeSpeedtestCli = `#!/bin/sh
echo "Retrieving speedtest.net configuration..."
echo "Testing from Example ISP (192.0.2.1)..."
echo "Selecting best server based on ping..."
/bin/sleep 0.3
echo "Hosted by Example (Town) [1.23 km]: 12.345 ms"
printf "Testing download speed"
/bin/sleep 0.3
printf "....\\n"
echo "Download: 93.10 Mbit/s"
printf "Testing upload speed"
/bin/sleep 0.3
printf "....\\n"
echo "Upload: 10.50 Mbit/s"
`;

/** A loopback port that was free a moment ago. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

async function waitStarted(): Promise<{ group: number; sleeper: number }> {
  return waitForStartedFile(join(dir, 'started'));
}

before(() => {
  writeFileSync(join(dir, 'nmap'), fakeNmap);
  writeFileSync(join(dir, 'speedtest-cli'), fakeSpeedtestCli);
  chmodSync(join(dir, 'nmap'), 0o755);
  chmodSync(join(dir, 'speedtest-cli'), 0o755);
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(emptyDir, { recursive: true, force: true });
});

describe('streamed tools, real commands on loopback (speed test: builtin, loopback stand-in)', () => {
  let standIn: ChildProcess;
  let server: TestServer;

  before(async () => {
    const port = await freePort();
    standIn = spawn(
      process.execPath,
      ['-e', speedServerScript.replace("'0.0.0.0'", "'127.0.0.1'"), String(port)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const lines = createInterface({ input: standIn.stdout as NodeJS.ReadableStream });
    await new Promise<void>((resolve) => {
      lines.on('line', (line) => {
        if (line === 'listening') resolve();
      });
    });
    server = await TestServer.start({
      env: {
        SPEEDTEST_BACKEND: 'builtin',
        SPEEDTEST_SERVER_URL: `http://127.0.0.1:${port}`,
        SPEEDTEST_STREAMS: '2',
        SPEEDTEST_DURATION_MS: '1000',
      },
    });
  });
  after(async () => {
    await server.stop();
    standIn.kill();
  });

  test("traceroute and nmap to 127.0.0.1: every output line as progress, then the plain answer's shape", async () => {
    const traced = await openSse(server, 'POST', '/nettools/traceroute', {
      body: { devLastIP: '127.0.0.1' },
    });
    await traced.done;
    const trace = finalMessage(traced);
    assert.equal(trace.final.event, 'result', trace.final.data);
    assert.deepEqual(
      trace.progress.map((m) => m.json.line),
      String(trace.final.json.output).split('\n'),
    );
    const plainTrace = await server.request('POST', '/nettools/traceroute', {
      body: { devLastIP: '127.0.0.1' },
    });
    assert.deepEqual(Object.keys(trace.final.json).sort(), Object.keys(plainTrace.json).sort());

    const body = { scan: '127.0.0.1', mode: 'fast' };
    const scanned = await openSse(server, 'POST', '/nettools/nmap', { body });
    await scanned.done;
    const scan = finalMessage(scanned);
    assert.equal(scan.final.event, 'result', scan.final.data);
    assert.deepEqual(
      scan.progress.map((m) => String(m.json.line)).filter((line) => line.trim() !== ''),
      scan.final.json.output,
    );
    const plainScan = await server.request('POST', '/nettools/nmap', { body });
    assert.equal(plainScan.status, 200);
    assert.deepEqual(Object.keys(scan.final.json).sort(), Object.keys(plainScan.json).sort());
    assert.deepEqual(scan.final.json.hosts, plainScan.json.hosts);
  });

  test('each phase as it ends, to two streaming clients of the same test; the result is the plain answer', async () => {
    const first = await openSse(server, 'GET', '/nettools/speedtest');
    // The second client joins once the first has seen the latency: it gets that phase at once.
    await first.waitFor((m) => m.event === 'progress');
    const [second, plain] = await Promise.all([
      openSse(server, 'GET', '/nettools/speedtest'),
      server.request('GET', '/nettools/speedtest'),
    ]);
    await Promise.all([first.done, second.done]);
    assert.equal(plain.status, 200, plain.text);
    for (const stream of [first, second]) {
      assert.equal(stream.status, 200);
      const { final } = finalMessage(stream);
      assert.equal(final.event, 'result');
      assert.deepEqual(final.json, plain.json, 'one shared test: the same result as the plain request');
      const result = plain.json.result as { pingMs: number; downloadMbps: number; uploadMbps: number };
      assert.deepEqual(
        stream.messages.filter((m) => m.event === 'progress').map((m) => m.json),
        [
          { phase: 'latency', pingMs: result.pingMs },
          { phase: 'download', mbps: result.downloadMbps },
          { phase: 'upload', mbps: result.uploadMbps },
        ],
      );
    }
    const progress = first.messages.filter((m) => m.event === 'progress');
    const { final } = finalMessage(first);
    // The download phase alone takes SPEEDTEST_DURATION_MS: each phase was read before the next.
    assert.ok((progress[0]?.at ?? Infinity) < (progress[1]?.at ?? 0));
    assert.ok((progress[1]?.at ?? Infinity) < final.at);
  });
});

describe('streamed tools: speedtest-cli progress and error paths', () => {
  let server: TestServer;
  let missing: TestServer;

  before(async () => {
    [server, missing] = await Promise.all([
      TestServer.start({
        env: {
          TOOL_PATH: dir,
          SPEEDTEST_BACKEND: 'speedtest-cli',
          TOOL_CONCURRENCY: '1',
          TOOL_QUEUE: '0',
          SSE_KEEPALIVE_MS: '50',
          NMAP_TIMEOUT_MS: '120000',
        },
      }),
      TestServer.start({ env: { TOOL_PATH: emptyDir, SPEEDTEST_BACKEND: 'speedtest-cli' } }),
    ]);
  });
  after(async () => {
    await Promise.all([server.stop(), missing.stop()]);
  });

  test('speedtest-cli: its ping, download and upload lines as progress, then the result', async () => {
    const stream = await openSse(server, 'GET', '/nettools/speedtest');
    await stream.done;
    const { final } = finalMessage(stream);
    assert.equal(final.event, 'result', final.data);
    assert.deepEqual(final.json, {
      success: true,
      output: ['Ping: 12.345 ms', 'Download: 93.1 Mbit/s', 'Upload: 10.5 Mbit/s'],
      result: { pingMs: 12.345, downloadMbps: 93.1, uploadMbps: 10.5 },
    });
    const progress = stream.messages.filter((m) => m.event === 'progress');
    assert.deepEqual(
      progress.map((m) => m.json),
      [
        { phase: 'latency', pingMs: 12.345 },
        { phase: 'download', mbps: 93.1 },
        { phase: 'upload', mbps: 10.5 },
      ],
    );
    assert.ok((progress[0]?.at ?? Infinity) < (progress[1]?.at ?? 0), 'ping read before the download ended');
    const plain = await server.request('GET', '/nettools/speedtest');
    assert.deepEqual(plain.json, final.json);
  });

  test('missing tool: 200, then event: error with status 503 naming the package', async () => {
    const cases: [string, string, unknown, string][] = [
      ['POST', '/nettools/nmap', { scan: '127.0.0.1', mode: 'fast' }, 'nmap'],
      ['POST', '/nettools/traceroute', { devLastIP: '127.0.0.1' }, 'traceroute'],
      ['GET', '/nettools/speedtest', undefined, 'speedtest-cli'],
    ];
    for (const [method, path, body, pkg] of cases) {
      const stream = await openSse(missing, method, path, { body });
      assert.equal(stream.status, 200, path);
      await stream.done;
      const { final } = finalMessage(stream);
      assert.equal(final.event, 'error');
      assert.equal(final.json.status, 503);
      assert.equal(final.json.success, false);
      assert.equal(final.json.error, 'Tool not installed');
      assert.match(String(final.json.message), new RegExp(`apt-get install ${pkg}`));
    }
  });

  test('saturated queue: event: error with status 429; the client going away kills the process group', async () => {
    rmSync(join(dir, 'started'), { force: true });
    const running = await openSse(server, 'POST', '/nettools/nmap', {
      body: { scan: '127.0.0.2', mode: 'fast' },
    });
    assert.equal(running.status, 200);
    const { group, sleeper } = await waitStarted();
    const first = await running.waitFor((m) => m.event === 'progress');
    assert.deepEqual(first.json, { line: 'Starting Nmap (fake)' });
    await running.waitFor(() => running.comments.length > 0);
    assert.equal(running.comments[0], 'keep-alive', 'a comment line keeps the stream open');

    const refused = await openSse(server, 'POST', '/nettools/nmap', {
      body: { scan: '127.0.0.3', mode: 'fast' },
    });
    assert.equal(refused.status, 200);
    await refused.done;
    const { final } = finalMessage(refused);
    assert.equal(final.event, 'error');
    assert.equal(final.json.status, 429);
    assert.equal(final.json.error, 'Too Many Requests');

    assert.ok(processesInGroup(group).length >= 2, 'the scan and its child run');
    running.close();
    assert.ok(
      await eventually(() => processesInGroup(group).length === 0),
      'no process of the group is left after the client went away',
    );
    assert.equal(isAlive(sleeper), false);
  });

  test('bad input is still a plain JSON 400, a wrong token a plain 403, and nothing starts', async () => {
    rmSync(join(dir, 'started'), { force: true });
    const bad: [string, string, unknown][] = [
      ['POST', '/nettools/nmap', { scan: '-oN /tmp/x', mode: 'fast' }],
      ['POST', '/nettools/nmap', { scan: '127.0.0.1', mode: 'FAST' }],
      ['POST', '/nettools/nmap', { scan: 127, mode: 'fast' }],
      ['POST', '/nettools/traceroute', { devLastIP: 'example.com' }],
      ['POST', '/nettools/traceroute', { devLastIP: '127.0.0.1', extra: 1 }],
    ];
    for (const [method, path, body] of bad) {
      const res = await openSse(server, method, path, { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal((JSON.parse(res.text) as { success: boolean }).success, false);
    }
    for (const [method, path, body] of [
      ['POST', '/nettools/nmap', { scan: '127.0.0.1', mode: 'fast' }],
      ['GET', '/nettools/speedtest', undefined],
      ['POST', '/nettools/scan', undefined],
      ['GET', '/stream', undefined],
    ] as const) {
      const res = await openSse(server, method, path, { body, token: 'wrong-token' });
      assert.equal(res.status, 403, path);
      assert.deepEqual(JSON.parse(res.text), notAuthorizedBody);
    }
    assert.equal(existsSync(join(dir, 'started')), false, 'no nmap was started');
  });
});
