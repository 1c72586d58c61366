/**
 * The tool runner's limits, over real HTTP, with a fake `nmap` (a shell script in a temp dir used
 * as TOOL_PATH) whose behaviour depends on the target: it can fork a `sleep` that ignores SIGTERM,
 * flood stdout, or fail with a message on stderr. Real processes, real process groups.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eventually, isAlive, processesInGroup, waitForStartedFile } from '../helpers/processes.js';
import { ownerTagOf } from '../../src/nettools/orphans.js';
import { TestServer } from '../helpers/server.js';
import { nextToolRun, toolRunCount, toolRuns } from '../helpers/toolruns.js';

const dir = mkdtempSync(join(tmpdir(), 'netkeep-faketools-'));
const emptyDir = mkdtempSync(join(tmpdir(), 'netkeep-notools-'));

/** The fake nmap: the target (last argument) picks the behaviour; $$ is its process group. */
const fakeNmap = `#!/bin/sh
prev=
for arg; do
  if [ "$prev" = "-oX" ]; then xml=$arg; fi
  prev=$arg
  target=$arg
done
case "$target" in
  127.0.0.7)
    echo '<nmaprun><runstats><finished exit="error" errormsg="fake: cannot scan"/></runstats></nmaprun>' > "$xml"
    ;;
  127.0.0.2)
    # Ignore SIGTERM, fork a sleeper that ignores it too: only SIGKILL to the group stops both.
    trap '' TERM
    /bin/sleep 300 &
    echo "$$ $!" > "${dir}/pids-$$"
    /bin/mv "${dir}/pids-$$" "${dir}/started"
    wait
    ;;
  127.0.0.3)
    /usr/bin/yes "flooding the output with a line that never ends"
    ;;
  127.0.0.8)
    # A report (fd 3) over 16 x TOOL_OUTPUT_LIMIT.
    /usr/bin/head -c 70000 /dev/zero > "$xml"
    ;;
  127.0.0.4)
    echo "some output"
    echo "nmap: fake failure for the test" >&2
    exit 3
    ;;
  *)
    /usr/bin/env > "${dir}/env"
    echo "Nmap scan report for $target"
    ;;
esac
`;

async function waitStarted(): Promise<{ group: number; sleeper: number }> {
  return waitForStartedFile(join(dir, 'started'));
}

before(() => {
  writeFileSync(join(dir, 'nmap'), fakeNmap);
  chmodSync(join(dir, 'nmap'), 0o755);
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(emptyDir, { recursive: true, force: true });
});

describe('runner: timeout, output cap, failures', () => {
  let server: TestServer;
  before(async () => {
    server = await TestServer.start({
      env: { TOOL_PATH: dir, NMAP_TIMEOUT_MS: '3000', TOOL_OUTPUT_LIMIT: '4096' },
    });
  });
  after(async () => {
    await server.stop();
  });

  test('a timeout answers 504 and kills the whole process group, even children ignoring SIGTERM', async () => {
    rmSync(join(dir, 'started'), { force: true });
    const seen = await toolRunCount(server);
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: '127.0.0.2', mode: 'fast' } });
    assert.equal(res.status, 504);
    assert.equal(res.json.error, 'Tool timed out');
    assert.match(String(res.json.message), /timed out/);
    const { group, sleeper } = await waitStarted();
    assert.ok(
      await eventually(() => processesInGroup(group).length === 0),
      'no process of the group is left',
    );
    assert.equal(isAlive(sleeper), false);
    const line = await nextToolRun(server, seen);
    assert.ok(line);
    assert.equal(line.outcome, 'timeout');
    assert.equal(line.tool, 'nmap');
    assert.ok(Array.isArray(line.args));
    assert.equal(typeof line.durationMs, 'number');
  });

  test('stdout beyond TOOL_OUTPUT_LIMIT stops the command and answers 500 Output too large', async () => {
    const seen = await toolRunCount(server);
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: '127.0.0.3', mode: 'fast' } });
    assert.equal(res.status, 500);
    assert.equal(res.json.error, 'Output too large');
    assert.equal((await nextToolRun(server, seen)).outcome, 'output-too-large');
  });

  test('a report on fd 3 over 16 x TOOL_OUTPUT_LIMIT answers 500 Output too large', async () => {
    const seen = await toolRunCount(server);
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: '127.0.0.8', mode: 'fast' } });
    assert.equal(res.status, 500);
    assert.equal(res.json.error, 'Output too large');
    assert.match(String(res.json.message), /report of more than 65536 bytes/);
    assert.equal((await nextToolRun(server, seen)).outcome, 'output-too-large');
  });

  test('a non-zero exit answers 500 with the tail of stderr as details', async () => {
    const seen = await toolRunCount(server);
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: '127.0.0.4', mode: 'fast' } });
    assert.equal(res.status, 500);
    assert.equal(res.json.error, 'Command failed');
    assert.match(String(res.json.message), /exit code 3/);
    assert.equal(res.json.details, 'nmap: fake failure for the test');
    assert.equal((await nextToolRun(server, seen)).exitCode, 3);
  });

  test('a report that says exit="error" is 500 with nmap\'s message, even after exit code 0', async () => {
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: '127.0.0.7', mode: 'fast' } });
    assert.equal(res.status, 500);
    assert.equal(res.json.error, 'Command failed');
    assert.equal(res.json.details, 'fake: cannot scan');
  });

  test('the command gets an argument array and a minimal environment', async () => {
    const seen = await toolRunCount(server);
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: '127.0.0.9', mode: 'fast' } });
    assert.equal(res.status, 500, 'the fake writes no XML, so the report cannot be read');
    assert.match(String(res.json.message), /XML/);
    const line = await nextToolRun(server, seen);
    const args = line.args as string[];
    assert.equal(args[0], '-F');
    assert.deepEqual(args.slice(-3), ['-oX', '/dev/fd/3', '127.0.0.9'], 'the XML report goes to fd 3');
    assert.equal(args.at(-1), '127.0.0.9');
    const env = readFileSync(join(dir, 'env'), 'utf8').trim().split('\n').sort();
    // sh itself adds PWD (and may add SHLVL/_); the runner passes only LC_ALL, PATH and the
    // owner tag (<server pid>.<its start time>) by which a later start finds orphans.
    const passed = env.filter((entry) => !/^(PWD|SHLVL|_|OLDPWD)=/.test(entry));
    assert.deepEqual(passed, [
      'LC_ALL=C',
      `NETKEEP_OWNER=${ownerTagOf(server.process.pid ?? 0)}`,
      `PATH=${dir}`,
    ]);
  });
});

describe('runner: concurrency limit and client disconnect', () => {
  let server: TestServer;
  before(async () => {
    server = await TestServer.start({
      env: { TOOL_PATH: dir, TOOL_CONCURRENCY: '1', TOOL_QUEUE: '0', NMAP_TIMEOUT_MS: '120000' },
    });
  });
  after(async () => {
    await server.stop();
  });

  test('saturated: 429 with Retry-After; a client disconnect kills the running scan', async () => {
    rmSync(join(dir, 'started'), { force: true });
    const controller = new AbortController();
    const slow = server
      .request('POST', '/nettools/nmap', {
        body: { scan: '127.0.0.2', mode: 'fast' },
        signal: controller.signal,
      })
      .catch((err: unknown) => err);
    const { group, sleeper } = await waitStarted();
    assert.ok(processesInGroup(group).length >= 2, 'the scan and its child run');

    const refused = await server.request('POST', '/nettools/nmap', {
      body: { scan: '127.0.0.5', mode: 'fast' },
    });
    assert.equal(refused.status, 429);
    assert.equal(refused.json.error, 'Too Many Requests');
    assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);

    controller.abort();
    assert.ok((await slow) instanceof Error, 'the client gave up');
    assert.ok(
      await eventually(() => processesInGroup(group).length === 0),
      'the scan and its child are gone after the disconnect',
    );
    assert.equal(isAlive(sleeper), false);
    assert.ok(await eventually(() => toolRuns(server).some((line) => line.outcome === 'aborted')));

    // The slot is free again.
    const next = await server.request('POST', '/nettools/nmap', {
      body: { scan: '127.0.0.4', mode: 'fast' },
    });
    assert.equal(next.status, 500);
    assert.equal(next.json.error, 'Command failed');
  });

  test('a normal answer does not count as a disconnect', async () => {
    const before = await toolRunCount(server);
    const res = await server.request('POST', '/nettools/nmap', { body: { scan: '127.0.0.4', mode: 'fast' } });
    assert.equal(res.status, 500);
    assert.equal((await nextToolRun(server, before)).outcome, 'exit-nonzero');
  });
});

describe('runner: shutdown', () => {
  test('SIGTERM stops running commands (whole group) and exits 0', async () => {
    const server = await TestServer.start({
      env: { TOOL_PATH: dir, SHUTDOWN_TIMEOUT_MS: '0', NMAP_TIMEOUT_MS: '120000' },
    });
    rmSync(join(dir, 'started'), { force: true });
    const pending = server
      .request('POST', '/nettools/nmap', { body: { scan: '127.0.0.2', mode: 'fast' } })
      .catch((err: unknown) => err);
    const { group } = await waitStarted();
    assert.equal(await server.stop(), 0);
    await pending;
    assert.ok(await eventually(() => processesInGroup(group).length === 0));
  });
});

describe('runner: tools not installed', () => {
  let server: TestServer;
  before(async () => {
    server = await TestServer.start({ env: { TOOL_PATH: emptyDir, SPEEDTEST_BACKEND: 'speedtest-cli' } });
  });
  after(async () => {
    await server.stop();
  });

  test('503 naming the Debian package, for every command-based tool', async () => {
    const cases: [string, string, unknown, string][] = [
      ['POST', '/nettools/nmap', { scan: '127.0.0.1', mode: 'fast' }, 'nmap'],
      ['POST', '/nettools/traceroute', { devLastIP: '127.0.0.1' }, 'traceroute'],
      ['POST', '/nettools/nslookup', { devLastIP: 'localhost' }, 'dnsutils'],
      ['GET', '/nettools/speedtest', undefined, 'speedtest-cli'],
    ];
    for (const [method, path, body, pkg] of cases) {
      const res = await server.request(method, path, { body });
      assert.equal(res.status, 503, path);
      assert.equal(res.json.error, 'Tool not installed');
      assert.match(String(res.json.message), new RegExp(`apt-get install ${pkg}`));
    }
  });
});
