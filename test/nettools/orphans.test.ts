/**
 * Tool processes die with their server, and what a killed server leaves is removed at the next
 * start. Before, a kill -9 of the server mid-nmap left nmap running (reparented to PID 1, with no
 * time limit, outside the concurrency limit) and its /tmp/netkeep-nmap-* directory behind.
 * The tool watchdog (src/nettools/watchdog.ts) kills the commands of a server that died; its
 * program is tested directly here too. Every scan targets loopback only.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { cleanupOrphans, nmapTempPrefix, ownerTag, ownerTagOf } from '../../src/nettools/orphans.js';
import { asNobody, childNamed, eventually, isAlive, killQuietly, watchdogOf } from '../helpers/processes.js';
import { commandMissing, rootMissing, skipUnlessCi } from '../helpers/requirements.js';
import { TestServer } from '../helpers/server.js';

const watchdogProgram = fileURLToPath(new URL('../../src/nettools/watchdog-process.js', import.meta.url));

/**
 * The server's watchdog, waited for: it is found by its command line, which it has only once its
 * exec is done (it is spawned right after the first command, so nmap may be seen first).
 */
async function watchdogStarted(serverPid: number, what: string): Promise<number> {
  let watchdog: number | undefined;
  assert.ok(await eventually(() => (watchdog = watchdogOf(serverPid)) !== undefined), what);
  return watchdog ?? 0;
}

/** A `sleep 600` leading its own process group, with NETKEEP_OWNER=<owner> when given. */
function sleeper(owner?: string): number {
  const child = spawn('/bin/sleep', ['600'], {
    detached: true,
    stdio: 'ignore',
    env: owner === undefined ? {} : { NETKEEP_OWNER: owner },
  });
  child.unref();
  return child.pid ?? 0;
}

/** -Pn over 1,024 loopback addresses: long enough to be killed mid-scan. */
const longScan = { scan: '127.0.0.0/22', mode: 'skipdiscovery' };

describe('tool processes and temp files of a killed server', () => {
  test('kill -9 mid-nmap: nmap and the watchdog go with the server, no file is left; the next start removes stray commands and old temp dirs', async () => {
    // A temp directory of its own (TMPDIR): every server start on this machine cleans the system
    // one, so only here is "the next start removed it" this test's next start.
    const privateTmp = mkdtempSync(join(tmpdir(), 'netkeep-orphans-'));
    const server = await TestServer.start({ env: { TMPDIR: privateTmp } });
    const serverPid = server.process.pid ?? 0;
    const tag = ownerTagOf(serverPid);
    const tempEntries = (): string[] => readdirSync(privateTmp);
    const pending = server.request('POST', '/nettools/nmap', { body: longScan }).catch(() => undefined);
    let nmapPid: number | undefined;
    assert.ok(
      await eventually(() => (nmapPid = childNamed(serverPid, 'nmap')) !== undefined, 200),
      'nmap started as a child of the server',
    );
    const watchdog = await watchdogStarted(serverPid, 'the first command started the watchdog');
    assert.deepEqual(tempEntries(), [], "nmap's XML goes to a file with no name");
    await server.kill();
    await pending;
    assert.ok(await eventually(() => !isAlive(nmapPid ?? 0)), `nmap ${nmapPid} died with its server`);
    assert.ok(await eventually(() => !isAlive(watchdog)), 'the watchdog exited after its work');

    // What older versions and escaped commands leave: a temp dir named after the dead server, a
    // command that escaped (as one started in the instant its server died would), and one whose
    // owner is alive (this test process). The next start removes the first two only.
    const oldDir = join(privateTmp, `${nmapTempPrefix}${tag}-old`);
    mkdirSync(oldDir);
    const stray = sleeper(tag);
    const owned = sleeper(ownerTag);
    try {
      const next = await TestServer.start({ dataDir: server.dataDir, env: { TMPDIR: privateTmp } });
      try {
        assert.deepEqual(tempEntries(), [], 'the next start removed the temp dir');
        // Killed by this start, or by another server starting on this machine meanwhile: each start
        // kills every tool process whose owner is gone (the next test checks the list itself).
        assert.ok(await eventually(() => !isAlive(stray)), 'the stray command was killed');
        assert.ok(isAlive(owned), 'a command whose owner lives is left alone');
        const line = next.logs.find((l) => l.includes('removed what a previous server left behind'));
        assert.ok(line, 'the clean-up is logged');
        const logged = JSON.parse(line) as { killed: number[]; removed: string[] };
        assert.ok(!logged.killed.includes(owned));
        assert.deepEqual(logged.removed, [oldDir]);
      } finally {
        await next.stop();
      }
    } finally {
      killQuietly([stray, owned]);
      rmSync(privateTmp, { recursive: true, force: true });
      rmSync(server.dataDir, { recursive: true, force: true }); // kept by kill(), not owned by next
    }
  });

  test('the clean-up kills and lists a command whose owner is gone, and leaves one whose owner lives', () => {
    const emptyTmp = mkdtempSync(join(tmpdir(), 'netkeep-orphans-'));
    const stray = sleeper('999999997.1'); // no such pid: its owner is gone
    const owned = sleeper(ownerTag);
    try {
      const result = cleanupOrphans(emptyTmp);
      assert.ok(result.killed.includes(stray));
      assert.ok(!result.killed.includes(owned));
      assert.deepEqual(result.removed, []);
    } finally {
      killQuietly([stray, owned]);
      rmSync(emptyTmp, { recursive: true, force: true });
    }
  });

  test('a watchdog killed while a command runs is replaced, and the command still dies with the server', async () => {
    const server = await TestServer.start();
    const serverPid = server.process.pid ?? 0;
    const pending = server.request('POST', '/nettools/nmap', { body: longScan }).catch(() => undefined);
    let nmapPid: number | undefined;
    try {
      assert.ok(await eventually(() => (nmapPid = childNamed(serverPid, 'nmap')) !== undefined, 200));
      const first = await watchdogStarted(serverPid, 'the first watchdog');
      process.kill(first, 'SIGKILL');
      let second: number | undefined;
      assert.ok(
        await eventually(() => (second = watchdogOf(serverPid)) !== undefined && second !== first),
        'a new watchdog started while the command runs',
      );
      assert.ok(
        server.logs.some((l) => l.includes('the tool watchdog exited')),
        'its death is logged',
      );
      await server.kill();
      await pending;
      assert.ok(await eventually(() => !isAlive(nmapPid ?? 0)), 'the replacement killed nmap');
      assert.ok(await eventually(() => !isAlive(second ?? 0)));
    } finally {
      // On a failed assertion the server (and its scan) must not outlive the test.
      await server.kill(); // its watchdog then stops the scan
      rmSync(server.dataDir, { recursive: true, force: true });
    }
  });

  test('a server that stops normally takes its watchdog with it', async () => {
    const server = await TestServer.start();
    const serverPid = server.process.pid ?? 0;
    const res = await server.request('POST', '/nettools/traceroute', { body: { devLastIP: '127.0.0.1' } });
    assert.equal(res.status, 200, res.text);
    const watchdog = watchdogOf(serverPid);
    assert.ok(watchdog !== undefined);
    assert.equal(await server.stop(), 0);
    assert.ok(await eventually(() => !isAlive(watchdog)), 'the watchdog exited with its server');
  });

  // The scanner runs its discovery through the same runner. Stand-ins that only wait (exec'd, so
  // the waiting process is the one the runner started) take the place of arp-scan and nmap: no
  // packet is sent, and the cycle lasts until the server is killed. They drop NETKEEP_OWNER, so
  // that no netkeep starting meanwhile on this machine removes them as orphans: only the
  // tool watchdog can stop them here.
  for (const tool of ['arp-scan', 'nmap'] as const) {
    test(`kill -9 mid-scan: the scanner's ${tool} dies with the server`, async () => {
      const tools = mkdtempSync(join(tmpdir(), 'netkeep-scantools-'));
      writeFileSync(join(tools, tool), '#!/bin/sh\nexec /usr/bin/env -u NETKEEP_OWNER /bin/sleep 600\n');
      chmodSync(join(tools, tool), 0o755);
      const server = await TestServer.start({
        env: {
          TOOL_PATH: `${tools}:/usr/sbin:/usr/bin:/sbin:/bin`,
          SCAN_TOOL: tool,
          SCAN_SUBNETS: '127.0.0.0/16@lo',
          SCAN_INTERVAL: '3600',
        },
      });
      const serverPid = server.process.pid ?? 0;
      let waiting: number | undefined;
      try {
        const pending = server.request('POST', '/nettools/scan').catch(() => undefined);
        assert.ok(
          await eventually(() => (waiting = childNamed(serverPid, 'sleep')) !== undefined, 200),
          `the scan cycle started ${tool} as a child of the server`,
        );
        await server.kill();
        await pending;
        assert.ok(
          await eventually(() => !isAlive(waiting ?? 0)),
          `${tool} (${waiting}) died with its server`,
        );
      } finally {
        await server.kill();
        if (waiting !== undefined && isAlive(waiting)) process.kill(waiting, 'SIGKILL');
        rmSync(tools, { recursive: true, force: true });
        rmSync(server.dataDir, { recursive: true, force: true });
      }
    });
  }
});

describe('a command with file capabilities (the Docker image) dies with its server', () => {
  // The kernel clears a parent-death signal when a binary with file capabilities starts, and hides
  // such a process's environment from its owner: the watchdog knows it by pid. Needs root, to give
  // a copy of nmap capabilities and to run the server as `nobody`.
  const missing =
    rootMissing() ??
    commandMissing('/usr/sbin/setcap', 'libcap2-bin') ??
    commandMissing('/usr/bin/nmap', 'nmap');
  test(
    'kill -9 of a non-root server mid-nmap, nmap having CAP_NET_RAW from its file',
    {
      skip: skipUnlessCi(missing, 'the file-capability kill test'),
    },
    async () => {
      const bin = mkdtempSync(join(tmpdir(), 'netkeep-caps-bin-'));
      const dataDir = mkdtempSync(join(tmpdir(), 'netkeep-nonroot-'));
      try {
        chmodSync(bin, 0o755);
        chmodSync(dataDir, 0o777);
        copyFileSync('/usr/bin/nmap', join(bin, 'nmap'));
        chmodSync(join(bin, 'nmap'), 0o755);
        const setcap = spawnSync('/usr/sbin/setcap', ['cap_net_raw,cap_net_admin+eip', join(bin, 'nmap')], {
          encoding: 'utf8',
        });
        assert.equal(setcap.status, 0, setcap.stderr);
        const server = await TestServer.start({
          wrapper: asNobody,
          dataDir,
          env: { TOOL_PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin` },
        });
        const serverPid = server.process.pid ?? 0;
        const pending = server.request('POST', '/nettools/nmap', { body: longScan }).catch(() => undefined);
        let nmapPid: number | undefined;
        assert.ok(await eventually(() => (nmapPid = childNamed(serverPid, 'nmap')) !== undefined, 200));
        const capEff = /^CapEff:\s*(\S+)$/m.exec(readFileSync(`/proc/${nmapPid}/status`, 'utf8'))?.[1];
        assert.equal(capEff, '0000000000003000', 'nmap runs with the capabilities of its file');
        await server.kill();
        await pending;
        const died = await eventually(() => !isAlive(nmapPid ?? 0));
        if (!died) killQuietly([-(nmapPid ?? 0)]);
        assert.ok(died, `nmap ${nmapPid} died with its server`);
      } finally {
        rmSync(bin, { recursive: true, force: true });
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});

describe('the watchdog program', () => {
  /** Starts watchdog-process.js for `owner`; returns its stdin and a promise of its exit. */
  function startWatchdog(owner: string): { write: (text: string) => void; end: () => Promise<void> } {
    const child = spawn(process.execPath, [watchdogProgram, owner], { stdio: ['pipe', 'ignore', 'inherit'] });
    const exited = new Promise<void>((resolve) => {
      child.once('exit', () => {
        resolve();
      });
    });
    return {
      write: (text) => child.stdin.write(text),
      end: async () => {
        child.stdin.end();
        await exited;
      },
    };
  }

  test('when its stdin ends it kills the registered groups and the processes of its owner, nothing else', async () => {
    const owner = '999999999.1'; // no such server
    const registered = sleeper();
    const unregistered = sleeper();
    const tagged = sleeper(owner);
    const otherOwner = sleeper(`${owner}2`);
    const watchdog = startWatchdog(owner);
    try {
      watchdog.write(`+${registered}\n+${unregistered}\n-${unregistered}\n`);
      await watchdog.end();
      assert.ok(await eventually(() => !isAlive(registered)), 'a registered group is killed');
      assert.ok(await eventually(() => !isAlive(tagged)), "a process carrying the owner's tag is killed");
      assert.ok(isAlive(unregistered), 'a group registered then released is left alone');
      assert.ok(isAlive(otherOwner), "another owner's process is left alone");
    } finally {
      killQuietly([registered, unregistered, tagged, otherOwner]);
    }
  });

  test('after `close` (a normal shutdown) it kills only what is still registered', async () => {
    const owner = '999999998.1';
    const registered = sleeper();
    const tagged = sleeper(owner);
    const watchdog = startWatchdog(owner);
    try {
      watchdog.write(`+${registered}\nclose\n`);
      await watchdog.end();
      assert.ok(await eventually(() => !isAlive(registered)));
      assert.ok(isAlive(tagged), 'another runner of the same process may own it');
    } finally {
      killQuietly([registered, tagged]);
    }
  });
});
