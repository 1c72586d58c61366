/**
 * The log's destination: the lines of one turn of the event loop leave in one write at its end, in
 * order, and nothing is lost when the process exits right after logging.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createLogger, TurnBatchedLines, type WriteOut } from '../src/logger.js';

/**
 * A WriteOut that keeps what each call wrote; `take` says how much the nth call takes (or throws).
 */
function recorder(take: (bytes: Uint8Array, call: number) => number = (bytes) => bytes.length): {
  writeOut: WriteOut;
  calls: string[];
} {
  const calls: string[] = [];
  let attempts = 0;
  const writeOut: WriteOut = (_fd, bytes) => {
    const taken = take(bytes, attempts++);
    calls.push(Buffer.from(bytes.subarray(0, taken)).toString());
    return taken;
  };
  return { writeOut, calls };
}

const errno = (code: string): NodeJS.ErrnoException => Object.assign(new Error(code), { code });

describe('log lines', () => {
  test('the lines of one turn leave together at its end, in order; the next turn has its own write', async () => {
    const { writeOut, calls } = recorder();
    const lines = new TurnBatchedLines(99, writeOut);
    lines.write('one\n');
    lines.write('two\n');
    lines.write('three\n');
    assert.deepEqual(calls, [], 'nothing written during the turn');
    await nextTurn();
    assert.deepEqual(calls, ['one\ntwo\nthree\n']);
    lines.write('four\n');
    await nextTurn();
    assert.deepEqual(calls, ['one\ntwo\nthree\n', 'four\n']);
  });

  test('a short write is followed by the rest; a full pipe is waited for; a closed one ends logging', async () => {
    // Half of the bytes, then EAGAIN once, then the rest.
    const { writeOut, calls } = recorder((bytes, call) => {
      if (call === 1) throw errno('EAGAIN');
      return call === 0 ? Math.floor(bytes.length / 2) : bytes.length;
    });
    const lines = new TurnBatchedLines(99, writeOut);
    lines.write('abcdef\n');
    lines.write('ghij\n');
    lines.flush();
    assert.equal(calls.join(''), 'abcdef\nghij\n');

    let writes = 0;
    const closed = new TurnBatchedLines(99, () => {
      writes++;
      throw errno('EPIPE');
    });
    closed.write('lost\n');
    assert.doesNotThrow(() => {
      closed.flush();
    });
    closed.write('dropped\n');
    await nextTurn();
    assert.equal(writes, 1, 'no write is tried once the pipe is gone');
  });

  test('a logger flushed through pino writes at once', () => {
    const { writeOut, calls } = recorder();
    const lines = new TurnBatchedLines(99, writeOut);
    lines.write('x\n');
    let flushed = false;
    lines.flush(() => {
      flushed = true;
    });
    assert.ok(flushed);
    assert.deepEqual(calls, ['x\n']);
  });

  test('a process that exits or throws right after logging still writes its lines', () => {
    const logger = fileURLToPath(new URL('../src/logger.js', import.meta.url));
    for (const [ending, status] of [
      ['process.exit(3);', 3],
      ["throw new Error('boom');", 1],
    ] as const) {
      const script = `const { createLogger } = await import(${JSON.stringify(logger)});
        const log = createLogger('info');
        log.info('first'); log.warn({ token: 'secret-value' }, 'second');
        ${ending}`;
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
      assert.equal(child.status, status, child.stderr);
      const messages = child.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string; token?: string });
      assert.deepEqual(
        messages.map((m) => [m.msg, m.token]),
        [
          ['first', undefined],
          ['second', '[redacted]'],
        ],
        ending,
      );
    }
  });

  test('every logger of the process shares one destination', () => {
    // Tests and benches create a logger per server: one exit handler in all, not one each.
    const before = process.listenerCount('exit');
    createLogger('silent');
    createLogger('info');
    createLogger('silent');
    assert.ok(process.listenerCount('exit') <= before + 1);
  });
});
