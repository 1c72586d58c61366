/**
 * Tool processes die with their server, and what a killed server leaves is removed at the next
 * start. Before, a kill -9 of the server mid-nmap left nmap running (reparented to PID 1, with no
 * time limit, outside the concurrency limit) and its /tmp/netkeep-nmap-* directory behind.
 * Every scan here targets loopback only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { nmapTempPrefix, ownerTag, ownerTagOf } from '../../src/nettools/orphans.js';
import { findExecutable } from '../../src/nettools/runner.js';
import { eventually, isAlive } from '../helpers/processes.js';
import { TestServer } from '../helpers/server.js';

/** Pid of a child of `parent` whose command name is `name`, or undefined. */
function childNamed(parent: number, name: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && command === name) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function sleeper(owner: string): number {
  const child = spawn('/bin/sleep', ['600'], {
    detached: true,
    stdio: 'ignore',
    env: { NETKEEP_OWNER: owner },
  });
  child.unref();
  return child.pid ?? 0;
}

describe('tool processes and temp files of a killed server', () => {
  test('kill -9 mid-nmap: nmap dies with the server; the next start removes its temp dir and stray commands', async () => {
    // A temp directory of this test's own (TMPDIR): any netkeep starting meanwhile on this machine
    // (another test file, another checkout) removes a dead server's nmap directory from /tmp.
    const temp = mkdtempSync(join(tmpdir(), 'netkeep-orphans-'));
    // The real nmap, started without NETKEEP_OWNER: no netkeep starting meanwhile removes it as an
    // orphan, so only the parent-death signal can make it die with its server here.
    const tools = mkdtempSync(join(tmpdir(), 'netkeep-orphans-tools-'));
    const nmap = findExecutable('nmap', '/usr/sbin:/usr/bin:/sbin:/bin');
    assert.ok(nmap, 'nmap is installed');
    writeFileSync(join(tools, 'nmap'), `#!/bin/sh\nexec /usr/bin/env -u NETKEEP_OWNER ${nmap} "$@"\n`);
    chmodSync(join(tools, 'nmap'), 0o755);
    const server = await TestServer.start({
      env: { TMPDIR: temp, TOOL_PATH: `${tools}:/usr/sbin:/usr/bin:/sbin:/bin` },
    });
    const serverPid = server.process.pid ?? 0;
    const tag = ownerTagOf(serverPid);
    const tempDirs = (): string[] =>
      readdirSync(temp).filter((name) => name.startsWith(`${nmapTempPrefix}${tag}-`));
    let nmapPid: number | undefined;
    // A command that escaped (as one started in the instant its server died would), and one whose
    // owner is alive (this test process): only the first is killed at the next start.
    const sleepers: number[] = [];
    try {
      // -Pn over 1,024 loopback addresses: long enough to be killed mid-scan.
      const pending = server
        .request('POST', '/nettools/nmap', { body: { scan: '127.0.0.0/22', mode: 'skipdiscovery' } })
        .catch(() => undefined);
      assert.ok(
        await eventually(() => (nmapPid = childNamed(serverPid, 'nmap')) !== undefined, 200),
        'nmap started as a child of the server',
      );
      assert.equal(tempDirs().length, 1, 'the scan has its temp dir, named after its server');
      await server.kill();
      await pending;
      assert.ok(await eventually(() => !isAlive(nmapPid ?? 0)), `nmap ${nmapPid} died with its server`);
      assert.equal(tempDirs().length, 1, 'a killed server cannot remove its temp dir');

      const stray = sleeper(tag);
      const owned = sleeper(ownerTag);
      sleepers.push(stray, owned);
      const next = await TestServer.start({ dataDir: server.dataDir, env: { TMPDIR: temp } });
      try {
        assert.deepEqual(tempDirs(), [], 'the next start removed the temp dir');
        assert.ok(await eventually(() => !isAlive(stray)), 'the stray command was killed');
        assert.ok(isAlive(owned), 'a command whose owner lives is left alone');
        const line = next.logs.find((l) => l.includes('removed what a previous server left behind'));
        assert.ok(line, 'the clean-up is logged');
        const logged = JSON.parse(line) as { killed: number[]; removed: string[] };
        assert.ok(logged.killed.includes(stray));
        assert.ok(!logged.killed.includes(owned));
      } finally {
        await next.stop();
      }
    } finally {
      await server.kill();
      for (const pid of [...sleepers, ...(nmapPid !== undefined && isAlive(nmapPid) ? [nmapPid] : [])]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      for (const dir of [temp, tools, server.dataDir]) rmSync(dir, { recursive: true, force: true });
    }
  });

  // The scanner runs its discovery through the same runner. Stand-ins that only wait (exec'd, so
  // the waiting process is the one the runner started) take the place of arp-scan and nmap: no
  // packet is sent, and the cycle lasts until the server is killed. They drop NETKEEP_OWNER, so
  // that no netkeep starting meanwhile on this machine removes them as orphans: only the
  // parent-death signal can stop them here.
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
