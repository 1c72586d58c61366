/**
 * GET /stream: the live hub's messages as Server-Sent Events. Thin: the hub numbers, keeps and
 * fans out the messages; this plugin writes them. A reconnecting client's Last-Event-ID is
 * answered with what it missed, or with one `reset` message when that is no longer known (then
 * it reloads what it shows). Every open stream is ended when the server starts closing, so a
 * shutdown never waits for them.
 */
import type { App } from '../http/app.js';
import { ApiError } from '../http/errors.js';
import { ErrorRef } from '../http/schemas.js';
import { eventStreamRoute, openEventStream, type EventStream } from '../http/sse.js';
import type { LiveHub, LiveMessage } from './hub.js';

export interface LiveRoutesOptions {
  readonly hub: LiveHub;
  /** SSE_KEEPALIVE_MS. */
  readonly keepAliveMs: number;
  /** STREAM_CLIENT_BUFFER_BYTES: unsent bytes past which a client is dropped. */
  readonly clientBufferBytes: number;
  /** MAX_STREAMS: open streams past which a new one is refused (503), leaving connections for the rest. */
  readonly maxStreams: number;
}

/** The wire text of a batch, built once for every client (the hub hands each the same array). */
const wireCache = new WeakMap<readonly LiveMessage[], Buffer>();

export function wireText(batch: readonly LiveMessage[]): Buffer {
  let text = wireCache.get(batch);
  if (text === undefined) {
    text = Buffer.from(
      batch.map((m) => `id: ${m.id}\nevent: ${m.event}\ndata: ${m.json}\n\n`).join(''),
      'utf8',
    );
    wireCache.set(batch, text);
  }
  return text;
}

/** The byte length wireText would have, without building it (ids and event names are ASCII). */
function wireSize(batch: readonly LiveMessage[]): number {
  let size = 0;
  for (const m of batch) size += m.id.length + m.event.length + Buffer.byteLength(m.json) + 21;
  return size;
}

export default async function liveRoutes(app: App, options: LiveRoutesOptions): Promise<void> {
  const { hub } = options;
  const open = new Set<EventStream>();
  app.addHook('preClose', async () => {
    for (const stream of [...open]) stream.end();
  });

  app.get(
    '/stream',
    {
      config: eventStreamRoute,
      schema: {
        tags: ['live'],
        summary: 'Live feed of changes (Server-Sent Events)',
        description:
          'text/event-stream of `device-event` (each event a scan cycle writes, as the webhook event object), ' +
          '`scan` (a finished cycle summary), `device` ({mac, change} for API writes) and `devices-changed` ' +
          '({created, updated} counts: one message for a whole CSV import). Every message has an id; ' +
          'reconnecting with Last-Event-ID replays what was missed from a buffer of STREAM_REPLAY_EVENTS messages, ' +
          'or sends one `reset` message when that is no longer possible (or more than STREAM_CLIENT_BUFFER_BYTES). A client that falls more than ' +
          'STREAM_CLIENT_BUFFER_BYTES behind, or would be sent more than that at once, is disconnected. At most MAX_STREAMS streams are open at once: ' +
          'past that, 503 STREAM_LIMIT (with Retry-After) and the connection is closed.',
        headers: {
          type: 'object',
          properties: { 'last-event-id': { type: 'string', maxLength: 64 } },
        },
        response: {
          200: {
            description: 'An event stream.',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          403: ErrorRef,
          503: ErrorRef,
        },
      },
    },
    async (request, reply) => {
      if (open.size >= options.maxStreams) {
        // The refused client's connection is not kept: it would hold one of MAX_CONNECTIONS idle.
        void reply.header('Connection', 'close');
        throw new ApiError(
          503,
          'Unavailable',
          `Too many open streams: at most MAX_STREAMS (${options.maxStreams}) at once; try again later.`,
          undefined,
          { 'Retry-After': '10' },
          'STREAM_LIMIT',
        );
      }
      const lastEventId = request.headers['last-event-id'];
      const stream = openEventStream(request, reply, {
        keepAliveMs: options.keepAliveMs,
        maxBufferedBytes: options.clientBufferBytes,
        onDrop: (bufferedBytes) => {
          request.log.warn(
            { event: 'stream-client-dropped', bufferedBytes, limit: options.clientBufferBytes },
            'GET /stream client dropped: it fell too far behind',
          );
        },
      });
      if (typeof lastEventId === 'string' && lastEventId !== '') {
        const replay = hub.replayAfter(lastEventId);
        // A replay is built for this client alone: more than the client may hold is a reset.
        const message =
          replay.kind === 'gap'
            ? replay.reason
            : wireSize(replay.messages) > options.clientBufferBytes
              ? 'More was missed than STREAM_CLIENT_BUFFER_BYTES allows to replay.'
              : undefined;
        if (message !== undefined) stream.send('reset', { lastEventId, message }, hub.lastId || undefined);
        else if (replay.kind === 'messages' && replay.messages.length > 0)
          stream.write(wireText(replay.messages));
      }
      // Replay and subscription happen in the same tick: no message can fall between them.
      const unsubscribe = hub.subscribe((batch) => {
        stream.write(wireText(batch));
      });
      open.add(stream);
      stream.onClose(() => {
        unsubscribe();
        open.delete(stream);
      });
      return reply;
    },
  );
}
