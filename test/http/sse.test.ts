/**
 * The event-stream writer's bound on what a client may hold: over a real socket whose reader never
 * reads, writes in one tick (a burst: many messages published at once) count like earlier ones,
 * so the client is dropped once they pass the limit instead of piling up in the server's memory.
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { EventStream } from '../../src/http/sse.js';
import { eventually } from '../helpers/processes.js';

describe('EventStream: bounded per client', () => {
  const limit = 64 * 1024;
  let server: ReturnType<typeof createServer>;
  let port = 0;
  const responses: ServerResponse[] = [];

  before(async () => {
    server = createServer((_req, res) => {
      responses.push(res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    port = typeof address === 'object' && address ? address.port : 0;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** A stream to a client that sent its request and then reads nothing. */
  async function stalledStream(
    onDrop: (bytes: number) => void,
  ): Promise<{ stream: EventStream; res: ServerResponse }> {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause();
    const count = responses.length;
    assert.ok(await eventually(() => responses.length > count), 'the request arrived');
    const res = responses.at(-1) as ServerResponse;
    return { stream: new EventStream(res, { keepAliveMs: 60_000, maxBufferedBytes: limit, onDrop }), res };
  }

  test('a burst written in one tick is bounded by the limit: the client is dropped, not buffered', async () => {
    let dropped: number | undefined;
    const { stream, res } = await stalledStream((bytes) => {
      dropped = bytes;
    });
    const message = `event: device\ndata: ${'x'.repeat(4000)}\n\n`;
    let held = 0;
    let written = 0;
    // 200 messages of 4 KB (800 KB) in one tick, as 2,000 publications of one import would come.
    for (let i = 0; i < 200; i++) {
      if (!stream.write(message)) break;
      written++;
      held = Math.max(held, res.writableLength);
    }
    assert.ok(dropped !== undefined, `the client was dropped (${written} messages accepted)`);
    assert.ok(held <= limit + message.length, `held ${held} bytes, limit ${limit}`);
    assert.equal(stream.open, false);
  });

  test('one message larger than the limit still reaches a client that holds nothing', async () => {
    let dropped = false;
    const { stream } = await stalledStream(() => {
      dropped = true;
    });
    assert.equal(stream.write(`event: scan\ndata: ${'y'.repeat(limit * 2)}\n\n`), true);
    assert.equal(dropped, false);
    // Anything more in the same tick would pass the limit: dropped.
    assert.equal(stream.write('event: scan\ndata: {}\n\n'), false);
    assert.equal(dropped, true);
  });
});
