/**
 * SPEEDTEST_TIMEOUT_MS shorter than a phase of the builtin test (download or upload): the answer is
 * the documented 504, not a 200 whose cut phases read as 0 Mbit/s. Against the speed stand-in on
 * loopback.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startLoopbackSpeedServer, type LoopbackSpeedServer } from '../helpers/speedserver.js';
import { TestServer } from '../helpers/server.js';

/**
 * Runs, for the enclosing describe, the builtin speed test (2 streams, `durationMs` per phase,
 * `timeoutMs` in all) against a speed stand-in on loopback.
 */
function speedTestServer(
  durationMs: number,
  timeoutMs: number,
): { readonly standIn: () => LoopbackSpeedServer; readonly server: () => TestServer } {
  let standIn: LoopbackSpeedServer | undefined;
  let server: TestServer | undefined;
  before(async () => {
    standIn = await startLoopbackSpeedServer();
    server = await TestServer.start({
      env: {
        SPEEDTEST_BACKEND: 'builtin',
        SPEEDTEST_SERVER_URL: standIn.url,
        SPEEDTEST_STREAMS: '2',
        SPEEDTEST_DURATION_MS: String(durationMs),
        SPEEDTEST_TIMEOUT_MS: String(timeoutMs),
      },
    });
  });
  after(async () => {
    await server?.stop();
    standIn?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    assert.ok(value !== undefined, 'started in before()');
    return value;
  };
  return { standIn: () => started(standIn), server: () => started(server) };
}

describe('builtin speed test past SPEEDTEST_TIMEOUT_MS', () => {
  const { standIn, server } = speedTestServer(5000, 1500);

  test('the limit falls inside the download phase: 504 Tool timed out', async () => {
    const res = await server().request('GET', '/nettools/speedtest');
    assert.equal(res.status, 504, res.text);
    assert.deepEqual(
      { success: res.json.success, error: res.json.error },
      { success: false, error: 'Tool timed out' },
    );
    assert.match(String(res.json.message), /1500 ms/);
    assert.ok(
      standIn().lines.some((line) => line.startsWith('down ') && line !== 'down 0'),
      'the download phase had started',
    );
  });
});

describe('builtin speed test cut inside its upload phase', () => {
  // Download ends ~2 s in; upload would end ~4 s in: the 3 s limit falls in the upload phase.
  const { server } = speedTestServer(2000, 3000);

  test('the download phase is reported, then the 504: no result with upload 0', async () => {
    const res = await server().request('GET', '/nettools/speedtest', {
      headers: { accept: 'text/event-stream' },
    });
    assert.equal(res.status, 200, res.text);
    const events = res.text
      .split('\n\n')
      .map((block) => ({
        event: /^event: (.*)$/m.exec(block)?.[1],
        data: /^data: (.*)$/m.exec(block)?.[1],
      }))
      .filter((e) => e.event !== undefined);
    const phases = events
      .filter((e) => e.event === 'progress')
      .map((e) => (JSON.parse(e.data ?? '{}') as { phase?: string }).phase);
    assert.deepEqual(phases, ['latency', 'download'], res.text);
    const last = events[events.length - 1];
    assert.equal(last?.event, 'error', res.text);
    const body = JSON.parse(last.data ?? '{}') as Record<string, unknown>;
    assert.deepEqual([body.status, body.code], [504, 'SPEEDTEST_TIMEOUT']);
  });
});
