/**
 * GET /stream over real HTTP: API writes and scan cycles (the real scanner and store, discovery
 * by a stand-in arp-scan that prints a chosen number of hosts) appear in order with ids; a
 * reconnect with Last-Event-ID replays what was missed, or says `reset` when the buffer no longer
 * holds it; a stalled reader is dropped past STREAM_CLIENT_BUFFER_BYTES while other clients go on;
 * SIGTERM ends every stream at once (SHUTDOWN_TIMEOUT_MS is ten minutes here: a shutdown that
 * waited for the streams would outlast the test).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  fakeArpScanMac,
  fakeArpScanEnv,
  setFakeArpScanCount,
  writeFakeArpScan,
} from '../helpers/fake-arp-scan.js';
import { eventually } from '../helpers/processes.js';
import { TestServer } from '../helpers/server.js';
import { openSse, stalledStreamClient, type SseMessage } from '../helpers/sse.js';
import { waitForFirstCycle } from '../scanner/helpers.js';

const seq = (message: SseMessage | undefined): number => Number(message?.id?.split('-')[1]);

describe('GET /stream', () => {
  const toolDir = mkdtempSync(join(tmpdir(), 'netkeep-live-stream-'));
  let server: TestServer;

  before(async () => {
    writeFakeArpScan(toolDir, 3);
    server = await TestServer.start({
      env: {
        ...fakeArpScanEnv(toolDir),
        STREAM_REPLAY_EVENTS: '8',
        STREAM_CLIENT_BUFFER_BYTES: '1024',
        SHUTDOWN_TIMEOUT_MS: '600000',
      },
    });
    await waitForFirstCycle(server); // the automatic cycle: hosts 0-2 are new
  });
  after(async () => {
    await server.stop();
    rmSync(toolDir, { recursive: true, force: true });
  });

  test('API writes in order, each with a larger id', async () => {
    const stream = await openSse(server, 'GET', '/stream');
    assert.equal(stream.status, 200);
    assert.equal(stream.headers.get('content-type'), 'text/event-stream');
    const mac = 'aa:bb:cc:00:00:01';
    assert.equal((await server.request('POST', `/device/${mac}`, { body: { createNew: true } })).status, 200);
    assert.equal(
      (await server.request('POST', `/device/${mac}`, { body: { devName: 'printer' } })).status,
      200,
    );
    assert.equal((await server.request('DELETE', `/device/${mac}/delete`)).status, 200);
    await stream.waitFor((m) => m.event === 'device' && m.json.change === 'deleted');
    stream.close();
    assert.deepEqual(
      stream.messages.map((m) => [m.event, m.json]),
      [
        ['device', { mac, change: 'created' }],
        ['device', { mac, change: 'updated' }],
        ['device', { mac, change: 'deleted' }],
      ],
    );
    const ids = stream.messages.map(seq);
    assert.ok(
      ids.every((id, i) => i === 0 || id === (ids[i - 1] ?? 0) + 1),
      `consecutive ids: ${ids.join(',')}`,
    );
  });

  test('a 2,000-device CSV import is one `devices-changed` message, not 2,000', async () => {
    const stream = await openSse(server, 'GET', '/stream');
    const mac = (i: number) =>
      `0a:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;
    const csv = `"devMac"\r\n${Array.from({ length: 2000 }, (_, i) => `"${mac(i)}"\r\n`).join('')}`;
    const boundary = '----netkeep-import';
    const upload = () =>
      server.request('POST', '/devices/import', {
        rawBody:
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="devices.csv"\r\n` +
          `Content-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`,
        contentType: `multipart/form-data; boundary=${boundary}`,
      });
    const first = await upload();
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.inserted, 2000);
    await stream.waitFor((m) => m.event === 'devices-changed');
    const second = await upload();
    assert.equal(second.json.updated, 2000);
    await stream.waitFor((m) => m.event === 'devices-changed' && m.json.updated === 2000);
    // A write after the imports: every message of the imports has arrived before it.
    const last = 'aa:bb:cc:00:00:77';
    assert.equal(
      (await server.request('POST', `/device/${last}`, { body: { createNew: true } })).status,
      200,
    );
    await stream.waitFor((m) => m.event === 'device' && m.json.mac === last);
    stream.close();
    assert.deepEqual(
      stream.messages.map((m) => [m.event, m.json]),
      [
        ['devices-changed', { created: 2000, updated: 0 }],
        ['devices-changed', { created: 0, updated: 2000 }],
        ['device', { mac: last, change: 'created' }],
      ],
    );
    assert.equal((await server.request('DELETE', `/device/${last}/delete`)).status, 200);
  });

  test('a scan cycle: every event it wrote, as the webhook event object, then its summary', async () => {
    const stream = await openSse(server, 'GET', '/stream');
    const res = await server.request('POST', '/nettools/scan');
    assert.equal(res.status, 200, res.text);
    const summary = await stream.waitFor((m) => m.event === 'scan');
    stream.close();
    // The second set (hosts 3-5) is new, the first (0-2) disconnected.
    const events = stream.messages.filter((m) => m.event === 'device-event');
    assert.equal(events.length, 6);
    assert.equal(stream.messages.at(-1), summary, "the summary comes after the cycle's events");
    assert.deepEqual(summary.json, (res.json as { lastCycle: unknown }).lastCycle);
    const ids = stream.messages.map(seq);
    assert.ok(
      ids.every((id, i) => i === 0 || id === (ids[i - 1] ?? 0) + 1),
      `consecutive ids: ${ids.join(',')}`,
    );

    const newOne = events.find((m) => m.json.mac === fakeArpScanMac(3));
    assert.ok(newOne);
    const { time, ...rest } = newOne.json;
    assert.deepEqual(rest, {
      type: 'New Device',
      mac: fakeArpScanMac(3),
      ip: '127.0.0.4',
      additionalInfo: '',
      device: {
        devName: '(unknown)',
        devOwner: '',
        devType: '',
        devVendor: 'Fake Vendor',
        devLastIP: '127.0.0.4',
        devStatus: 'On-line',
      },
    });
    // The same event as the API lists it.
    const stored = await server.request('GET', `/device/${fakeArpScanMac(3)}/events`);
    const listed = (stored.json.events as { eve_EventType: string; eve_DateTime: string }[])[0];
    assert.equal(listed?.eve_EventType, 'New Device');
    assert.equal(time, listed.eve_DateTime);
    const gone = events.find((m) => m.json.mac === fakeArpScanMac(0));
    assert.ok(gone);
    assert.equal(gone.json.type, 'Disconnected');
    assert.equal((gone.json.device as { devStatus: string }).devStatus, 'Off-line');
    // The cycles are counted in /metrics too: the automatic one and this one.
    const metrics = await server.request('GET', '/metrics');
    assert.match(metrics.text, /^netkeep_scan_cycle_duration_seconds_count 2$/m);
    assert.match(metrics.text, /^netkeep_scan_errors_total 0$/m);
  });

  test('reconnecting with Last-Event-ID replays what was missed; an id out of the buffer gets `reset`', async () => {
    const first = await openSse(server, 'GET', '/stream');
    await server.request('POST', '/device/aa:bb:cc:00:00:02', { body: { createNew: true } });
    const seen = await first.waitFor((m) => m.event === 'device');
    first.close();
    await server.request('POST', '/device/aa:bb:cc:00:00:02', { body: { devName: 'a' } });
    await server.request('POST', '/device/aa:bb:cc:00:00:02', { body: { devName: 'b' } });

    const again = await openSse(server, 'GET', '/stream', { headers: { 'last-event-id': seen.id ?? '' } });
    await again.waitFor((m) => m.event === 'device' && seq(m) === seq(seen) + 2);
    assert.deepEqual(
      again.messages.map((m) => [seq(m), m.json.change]),
      [
        [seq(seen) + 1, 'updated'],
        [seq(seen) + 2, 'updated'],
      ],
    );
    // Live messages follow the replay.
    await server.request('POST', '/device/aa:bb:cc:00:00:02', { body: { devName: 'c' } });
    await again.waitFor((m) => seq(m) === seq(seen) + 3);
    again.close();

    // Ten more writes: the ring of 8 no longer holds what came after `seen`.
    for (let i = 0; i < 10; i++)
      await server.request('POST', '/device/aa:bb:cc:00:00:02', { body: { devName: `n${i}` } });
    const late = await openSse(server, 'GET', '/stream', { headers: { 'last-event-id': seen.id ?? '' } });
    const reset = await late.waitFor((m) => m.event === 'reset');
    assert.equal(reset.json.lastEventId, seen.id);
    assert.match(String(reset.json.message), /no longer in the replay buffer/);
    assert.equal(
      seq(reset),
      seq(seen) + 13,
      'the reset carries the newest id, to resume from after a reload',
    );
    assert.equal(late.messages.length, 1);
    // An id from another run of the server (or made up) cannot be honoured either.
    const foreign = await openSse(server, 'GET', '/stream', { headers: { 'last-event-id': 'abc-1' } });
    assert.equal((await foreign.waitFor((m) => m.event === 'reset')).event, 'reset');
    late.close();
    foreign.close();
  });

  test('a replay larger than STREAM_CLIENT_BUFFER_BYTES is one `reset` instead', async () => {
    const first = await openSse(server, 'GET', '/stream');
    await server.request('POST', '/device/aa:bb:cc:00:00:03', { body: { createNew: true } });
    const seen = await first.waitFor((m) => m.event === 'device');
    first.close();
    // A cycle: 6 device events and the summary, about 2 KB, within the ring of 8 but over 1 KiB.
    const cycle = await server.request('POST', '/nettools/scan');
    assert.equal(cycle.status, 200, cycle.text);
    const again = await openSse(server, 'GET', '/stream', { headers: { 'last-event-id': seen.id ?? '' } });
    const reset = await again.waitFor((m) => m.event === 'reset');
    assert.match(String(reset.json.message), /STREAM_CLIENT_BUFFER_BYTES/);
    assert.equal(again.messages.length, 1, JSON.stringify(again.messages.map((m) => m.event)));
    // Live messages follow.
    await server.request('DELETE', '/device/aa:bb:cc:00:00:03/delete');
    await again.waitFor((m) => m.event === 'device' && m.json.change === 'deleted');
    again.close();
  });

  test('a stalled reader is dropped past STREAM_CLIENT_BUFFER_BYTES; a reading client gets everything', async () => {
    const reader = await openSse(server, 'GET', '/stream');
    const stalled = await stalledStreamClient(server);
    let closed = false;
    stalled.once('close', () => {
      closed = true;
    });
    // Cycles of 2 x 2000 events (~600 KB each) until the kernel's buffers are full and the
    // server's own buffer passes 1 KiB.
    setFakeArpScanCount(toolDir, 2000);
    const dropped = (): boolean =>
      server.logs.some((line) => line.includes('"event":"stream-client-dropped"'));
    let cycles = 0;
    for (; cycles < 20 && !dropped(); cycles++) {
      const res = await server.request('POST', '/nettools/scan');
      assert.equal(res.status, 200, res.text);
      await server.logsCaughtUp();
    }
    assert.ok(dropped(), `the stalled client was dropped (after ${cycles} cycles)`);
    const line = server.logs.find((l) => l.includes('"event":"stream-client-dropped"')) ?? '{}';
    assert.equal((JSON.parse(line) as { limit: number }).limit, 1024);
    // The reading client saw every cycle's summary, in order.
    await reader.waitFor(
      (m) => m.event === 'scan' && reader.messages.filter((s) => s.event === 'scan').length === cycles,
    );
    const ids = reader.messages.map(seq);
    assert.ok(
      ids.every((id, i) => i === 0 || id === (ids[i - 1] ?? 0) + 1),
      'no message missing',
    );
    reader.close();
    // Once it reads again, the dropped client finds its connection closed.
    stalled.resume();
    assert.ok(await eventually(() => closed, 400), 'the stalled connection was closed by the server');
    setFakeArpScanCount(toolDir, 3);
  });

  test('SIGTERM ends every open stream and the server exits 0 at once', async () => {
    const streams = await Promise.all([1, 2, 3].map(() => openSse(server, 'GET', '/stream')));
    assert.ok(streams.every((s) => s.status === 200));
    assert.equal(await server.stop({ keepData: true }), 0);
    await Promise.all(streams.map((s) => s.done));
    assert.ok(streams.every((s) => s.endedAt() !== undefined));
  });
});
