/**
 * GET /stream cannot take every connection: past MAX_STREAMS open streams a further one is
 * answered 503 STREAM_LIMIT and its connection closed, so /health, reads and writes keep
 * connections of their own. Real sockets against the real server, streams that never end.
 */
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../helpers/processes.js';
import { openSocket } from '../helpers/raw-http.js';
import { TestServer } from '../helpers/server.js';

interface RawStream {
  readonly socket: Socket;
  /** Everything received so far. */
  received(): string;
  closed(): boolean;
}

/** Opens GET /stream on a connection of its own and keeps it open (it never asks to end). */
async function openRawStream(server: TestServer): Promise<RawStream> {
  const socket = await openSocket(server.port);
  let text = '';
  let closed = false;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  socket.on('close', () => {
    closed = true;
  });
  socket.on('error', () => undefined);
  socket.write(
    `GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  return { socket, received: () => text, closed: () => closed };
}

const statusOf = (stream: RawStream): number =>
  Number(/^HTTP\/1\.1 (\d{3})/.exec(stream.received())?.[1] ?? 0);

describe('MAX_STREAMS', () => {
  let server: TestServer;
  const streams: RawStream[] = [];

  before(async () => {
    server = await TestServer.start({ env: { MAX_STREAMS: '4', MAX_CONNECTIONS: '12' } });
  });
  after(async () => {
    for (const stream of streams) stream.socket.destroy();
    await server.stop();
  });

  test('streams past MAX_STREAMS get 503 STREAM_LIMIT and are closed; other requests still get connections', async () => {
    // As many would-be streams as there are connections: without a cap they take them all.
    for (let i = 0; i < 12; i++) {
      streams.push(await openRawStream(server));
      assert.ok(
        await eventually(() => statusOf(streams[i] as RawStream) !== 0 || (streams[i] as RawStream).closed()),
        `stream ${i} was answered`,
      );
    }
    const statuses = streams.map(statusOf);
    assert.equal(statuses.filter((s) => s === 200).length, 4, statuses.join(' '));
    const refused = streams.filter((s) => statusOf(s) === 503);
    assert.equal(refused.length, 8, statuses.join(' '));
    for (const stream of refused) {
      assert.ok(await eventually(() => stream.closed()), 'a refused stream’s connection is closed');
      const body = stream.received().slice(stream.received().indexOf('\r\n\r\n') + 4);
      const json = JSON.parse(body) as Record<string, unknown>;
      assert.equal(json.code, 'STREAM_LIMIT');
      assert.match(String(json.message), /MAX_STREAMS \(4\)/);
    }
    // The four open streams hold four connections; the rest serve everything else.
    const health = await server.request('GET', '/health', { token: null });
    assert.equal(health.status, 200, health.text);
    const write = await server.request('POST', '/device/02:00:00:00:00:06', { body: { createNew: true } });
    assert.equal(write.status, 200, write.text);
    // The open streams are live: they carry that write.
    assert.ok(
      await eventually(() => streams.filter((s) => s.received().includes('02:00:00:00:00:06')).length === 4),
      'every open stream got the write',
    );
    // A stream that ends frees its place.
    streams[statuses.indexOf(200)]?.socket.destroy();
    const next = await openRawStream(server);
    streams.push(next);
    assert.ok(await eventually(() => statusOf(next) === 200), next.received());
  });
});
