/**
 * Tool processes die with their server, and what a killed server leaves is removed at the next
 * start. Before, a kill -9 of the server mid-nmap left nmap running (reparented to PID 1, with no
 * time limit, outside the concurrency limit) and its /tmp/netkeep-nmap-* directory behind.
 * Every scan here targets loopback only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, test } from 'node:test';
import { nmapTempPrefix, ownerTag, ownerTagOf } from '../../src/nettools/orphans.js';
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
  test('kill -9 mid-nmap: nmap dies with the server, no file is left; the next start removes stray commands and old temp dirs', async () => {
    const server = await TestServer.start();
    const serverPid = server.process.pid ?? 0;
    const tag = ownerTagOf(serverPid);
    const tempEntries = (): string[] =>
      readdirSync(tmpdir()).filter((name) => name.startsWith(`${nmapTempPrefix}${tag}-`));
    // -Pn over 1,024 loopback addresses: long enough to be killed mid-scan.
    const pending = server
      .request('POST', '/nettools/nmap', { body: { scan: '127.0.0.0/22', mode: 'skipdiscovery' } })
      .catch(() => undefined);
    let nmapPid: number | undefined;
    assert.ok(
      await eventually(() => (nmapPid = childNamed(serverPid, 'nmap')) !== undefined, 200),
      'nmap started as a child of the server',
    );
    assert.deepEqual(tempEntries(), [], "nmap's XML goes to a file with no name");
    await server.kill();
    await pending;
    assert.ok(await eventually(() => !isAlive(nmapPid ?? 0)), `nmap ${nmapPid} died with its server`);

    // What older versions and escaped commands leave: a temp dir named after the dead server, a
    // command that escaped (as one started in the instant its server died would), and one whose
    // owner is alive (this test process). The next start removes the first two only.
    const oldDir = join(tmpdir(), `${nmapTempPrefix}${tag}-old`);
    mkdirSync(oldDir);
    const stray = sleeper(tag);
    const owned = sleeper(ownerTag);
    try {
      const next = await TestServer.start({ dataDir: server.dataDir });
      try {
        assert.deepEqual(tempEntries(), [], 'the next start removed the temp dir');
        assert.ok(await eventually(() => !isAlive(stray)), 'the stray command was killed');
        assert.ok(isAlive(owned), 'a command whose owner lives is left alone');
        const line = next.logs.find((l) => l.includes('removed what a previous server left behind'));
        assert.ok(line, 'the clean-up is logged');
        const logged = JSON.parse(line) as { killed: number[]; removed: string[] };
        assert.ok(logged.killed.includes(stray));
        assert.ok(!logged.killed.includes(owned));
        assert.ok(logged.removed.includes(oldDir));
      } finally {
        await next.stop();
      }
    } finally {
      for (const pid of [stray, owned]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(oldDir, { recursive: true, force: true });
    }
  });
});
