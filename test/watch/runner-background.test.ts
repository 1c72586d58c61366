/**
 * The tool runner's background runs (the security watch's scans): one at a time, at the lowest CPU
 * priority (nice 19), and never in the last free slot, so a request always finds one; they wait in
 * their own line, which neither counts against TOOL_QUEUE nor is refused as saturated. A real
 * runner and a fake tool (a shell script on TOOL_PATH that waits for a release file).
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createLogger } from '../../src/logger.js';
import { backgroundNice, ToolRunner } from '../../src/nettools/runner.js';
import { eventually } from '../helpers/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'netkeep-background-'));
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The nice value of a running process (field 19 of /proc/<pid>/stat). */
function niceOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

test('background runs go one at a time at the lowest priority, leave a slot for requests and are never refused', async () => {
  writeFileSync(
    join(dir, 'nmap'),
    `#!/bin/sh
[ "$1" = quick ] && exit 0
echo "start $1 $$" >> ${dir}/log
while [ ! -e ${dir}/release ]; do /bin/sleep 0.02; done
echo "end $1 $$" >> ${dir}/log
`,
  );
  chmodSync(join(dir, 'nmap'), 0o755);
  const runner = new ToolRunner({
    toolPath: dir,
    concurrency: 3,
    queue: 0,
    outputLimit: 65536,
    logger: createLogger('silent'),
  });
  const log = (): string[][] =>
    existsSync(join(dir, 'log'))
      ? readFileSync(join(dir, 'log'), 'utf8')
          .trim()
          .split('\n')
          .map((line) => line.split(' '))
      : [];
  const started = (kind: string): string[][] => log().filter(([what, k]) => what === 'start' && k === kind);
  try {
    const background = Array.from({ length: 4 }, () =>
      runner.run({ tool: 'nmap', args: ['background'], timeoutMs: 60_000, background: true }),
    );
    assert.ok(await eventually(() => started('background').length === 1), 'one background run started');
    // A request finds a free slot, though three background runs wait (no queue at all).
    const quick = await runner.run({ tool: 'nmap', args: ['quick'], timeoutMs: 60_000 });
    assert.equal(quick.exitCode, 0);
    // With two of three slots free, still only one background run: the others wait for it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(started('background').length, 1, 'a second background run did not start');
    // The background command runs at nice 19, a request's at the server's own priority.
    const held = runner.run({ tool: 'nmap', args: ['request'], timeoutMs: 60_000 });
    assert.ok(await eventually(() => started('request').length === 1), 'the request runs beside it');
    const [backgroundPid, requestPid] = [started('background'), started('request')].map((s) =>
      Number(s[0]?.[2]),
    );
    assert.equal(niceOf(backgroundPid ?? 0), backgroundNice);
    assert.equal(niceOf(requestPid ?? 0), getPriority());
    // Two requests fill the last slot: every slot is busy and TOOL_QUEUE=0 refuses the next one.
    const held2 = runner.run({ tool: 'nmap', args: ['request'], timeoutMs: 60_000 });
    assert.ok(await eventually(() => started('request').length === 2), 'a second request runs');
    await assert.rejects(
      runner.run({ tool: 'nmap', args: ['quick'], timeoutMs: 60_000 }),
      (err: Error & { kind?: string }) => err.kind === 'saturated',
    );
    writeFileSync(join(dir, 'release'), '');
    await Promise.all([held, held2]);
    for (const run of background) assert.equal((await run).exitCode, 0);
    // Every background run ran, never two at once.
    let running = 0;
    let most = 0;
    for (const [what, kind] of log()) {
      if (kind !== 'background') continue;
      running += what === 'start' ? 1 : -1;
      most = Math.max(most, running);
    }
    assert.equal(started('background').length, 4);
    assert.equal(most, 1, `one background run at a time, saw ${most}`);
  } finally {
    writeFileSync(join(dir, 'release'), '');
    await runner.killAll();
  }
});
