/**
 * The tool runner's background runs (the security watch's scans): they never hold more than
 * TOOL_CONCURRENCY - 1 slots, so a request always finds one; they wait in their own line, which
 * neither counts against TOOL_QUEUE nor is refused as saturated. A real runner and a fake tool
 * (a shell script on TOOL_PATH that waits for a release file).
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createLogger } from '../../src/logger.js';
import { ToolRunner } from '../../src/nettools/runner.js';
import { eventually } from '../helpers/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'netkeep-background-'));
after(() => {
  rmSync(dir, { recursive: true, force: true });
});

test('background runs leave a slot for requests and are never refused', async () => {
  writeFileSync(
    join(dir, 'nmap'),
    `#!/bin/sh
[ "$1" = quick ] && exit 0
echo start >> ${dir}/log
while [ ! -e ${dir}/release ]; do /bin/sleep 0.02; done
echo end >> ${dir}/log
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
  try {
    const background = Array.from({ length: 6 }, () =>
      runner.run({ tool: 'nmap', args: ['slow'], timeoutMs: 60_000, background: true }),
    );
    const log = (): string[] =>
      existsSync(join(dir, 'log')) ? readFileSync(join(dir, 'log'), 'utf8').trim().split('\n') : [];
    assert.ok(await eventually(() => log().length === 2), 'two background runs started');
    // A request finds the slot left free, though four background runs wait (no queue at all).
    const quick = await runner.run({ tool: 'nmap', args: ['quick'], timeoutMs: 60_000 });
    assert.equal(quick.exitCode, 0);
    // A request that holds it: now every slot is busy and TOOL_QUEUE=0 refuses the next request.
    const held = runner.run({ tool: 'nmap', args: ['hold'], timeoutMs: 60_000 });
    assert.ok(await eventually(() => log().length === 3), 'the request runs beside two background runs');
    await assert.rejects(
      runner.run({ tool: 'nmap', args: ['quick'], timeoutMs: 60_000 }),
      (err: Error & { kind?: string }) => err.kind === 'saturated',
    );
    writeFileSync(join(dir, 'release'), '');
    await held;
    for (const run of background) assert.equal((await run).exitCode, 0);
    // At most three at once overall, every background run ran.
    let running = 0;
    let most = 0;
    for (const line of log()) {
      running += line === 'start' ? 1 : -1;
      most = Math.max(most, running);
    }
    assert.equal(log().filter((l) => l === 'start').length, 7);
    assert.ok(most <= 3, `at most 3 at once, saw ${most}`);
  } finally {
    writeFileSync(join(dir, 'release'), '');
    await runner.killAll();
  }
});
