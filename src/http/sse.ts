/**
 * Server-Sent Events: a small writer of our own on the raw response (why not a plugin:
 * docs/api/live.md). The route hijacks the reply once auth and validation have passed, so that
 * every refusal before that point is still the plain JSON error; from then on the answer is 200
 * `text/event-stream` and each message is `id:` (optional), `event:` and one `data:` line of JSON.
 *
 * Memory is bounded per client: writes go straight to the socket, and a client is cut off instead
 * of being buffered without end when either
 * - its unsent bytes from earlier ticks (Node's writable buffer: what the kernel would not take)
 *   pass `maxBufferedBytes` when the next message comes (a stalled reader), or
 * - what is written to it within one tick, before Node hands it to the socket, would pass
 *   `maxBufferedBytes` (a burst: many messages at once). Only the first write of a tick may be
 *   larger on its own (one batch of the live hub, whose buffer all clients share).
 * A client thus holds at most twice the limit, or the limit and one batch. A comment line every
 * `keepAliveMs` keeps proxies from closing an idle stream.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorResponse, type ErrorBody } from './errors.js';
import { disconnectSignal } from '../nettools/runner.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route may answer with an event stream (set it on every route that calls streamWork or
     * openEventStream): the request metrics then also count a stream that closes before its end.
     */
    eventStream?: boolean;
  }
}

/** Route config of a route that may answer with an event stream. */
export const eventStreamRoute = { eventStream: true } as const;

export interface EventStreamOptions {
  /** Interval of the keep-alive comment line (SSE_KEEPALIVE_MS). */
  readonly keepAliveMs: number;
  /** Unsent bytes a client may hold before it is dropped. Default: unbounded (tool streams, whose output is capped). */
  readonly maxBufferedBytes?: number;
  /** Told when a client is dropped for holding more than maxBufferedBytes (with how many). */
  readonly onDrop?: (bufferedBytes: number) => void;
}

/** True when the client asked for `text/event-stream` (and did not refuse it with q=0). */
export function wantsEventStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  if (accept === undefined) return false;
  return accept.split(',').some((range) => {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    return type === 'text/event-stream' && !params.some((param) => /^q=0(\.0{0,3})?$/.test(param));
  });
}

/** One open event stream. Every method is safe to call after the stream has ended. */
export class EventStream {
  private readonly keepAlive: NodeJS.Timeout;
  private readonly closeListeners: (() => void)[] = [];
  private ended = false;
  /** Bytes written since the current tick began (see write()). */
  private writtenThisTick = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly options: EventStreamOptions,
  ) {
    res.setHeader('Content-Type', 'text/event-stream');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    // nginx buffers proxied answers unless told not to.
    res.setHeader('X-Accel-Buffering', 'no');
    // The stream is the whole life of the connection: closing it after the stream ends means a
    // server shutting down never waits for a kept-alive connection of a stream it just ended.
    res.setHeader('Connection', 'close');
    res.writeHead(200);
    res.flushHeaders();
    this.keepAlive = setInterval(() => {
      this.write(': keep-alive\n\n');
    }, options.keepAliveMs);
    this.keepAlive.unref();
    res.once('close', () => {
      this.finish();
    });
  }

  /** False once the stream ended (finished, dropped, or the client went away). */
  get open(): boolean {
    return !this.ended;
  }

  /** Sends one message; false when the stream is no longer open. */
  send(event: string, data: unknown, id?: string | number): boolean {
    const head = id === undefined ? '' : `id: ${id}\n`;
    return this.write(`${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /**
   * Writes preformatted message text (the hub formats a batch once for every client). A client
   * still holding more than maxBufferedBytes of earlier ticks' writes, or whose writes in this tick
   * would pass maxBufferedBytes, is dropped instead.
   */
  write(text: string | Buffer): boolean {
    if (this.ended) return false;
    const limit = this.options.maxBufferedBytes;
    if (limit === undefined) {
      this.res.write(text);
      return true;
    }
    const size = typeof text === 'string' ? Buffer.byteLength(text) : text.length;
    // Node corks a chunked response until the next tick: what was written in this tick has not had
    // its chance to reach the socket yet, so it is not the reader's backlog; but it is held all the
    // same, so it has a bound of its own.
    const backlog = this.res.writableLength - this.writtenThisTick;
    if (backlog > limit || (this.writtenThisTick > 0 && this.writtenThisTick + size > limit)) {
      // What the client has not taken is dropped with the connection; it may reconnect with
      // Last-Event-ID and be replayed what it missed.
      const buffered = this.res.writableLength;
      this.res.destroy();
      this.finish();
      this.options.onDrop?.(buffered);
      return false;
    }
    this.res.write(text);
    if (this.writtenThisTick === 0)
      process.nextTick(() => {
        this.writtenThisTick = 0;
      });
    this.writtenThisTick += size;
    return true;
  }

  /** Ends the stream (the client sees the connection close after the last message). */
  end(): void {
    if (this.ended) return;
    this.res.end();
    this.finish();
  }

  onClose(listener: () => void): void {
    if (this.ended) listener();
    else this.closeListeners.push(listener);
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.keepAlive);
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}

/** Takes the reply over from Fastify (no serialisation, no error handler) and opens the stream. */
export function openEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  options: EventStreamOptions,
): EventStream {
  void reply.hijack();
  const started = performance.now();
  const stream = new EventStream(reply.raw, options);
  // Fastify's onResponse hooks (its request log line) run for a hijacked reply only when the
  // response finished; a stream the client closed or the server dropped is logged here.
  stream.onClose(() => {
    if (reply.raw.writableFinished) return;
    request.log.info(
      {
        method: request.method,
        url: request.url.split('?', 1)[0],
        status: 200,
        ms: Math.round(performance.now() - started),
        stream: 'closed before its end',
      },
      'request',
    );
  });
  return stream;
}

/** The `event: error` body: the plain answer's error body plus the status it would have had. */
export type StreamedError = ErrorBody & { status: number };

/**
 * Answers a tool request as an event stream: `progress` messages while `work` runs, then exactly
 * one `result` (the plain answer's body) or `error` (its error body plus `status`). The signal given
 * to `work` fires when the client goes away, which stops the command as a disconnect does.
 */
export async function streamWork<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  options: EventStreamOptions,
  work: (progress: (data: unknown) => void, signal: AbortSignal) => Promise<T>,
): Promise<FastifyReply> {
  const signal = disconnectSignal(reply.raw);
  const stream = openEventStream(request, reply, options);
  try {
    const body = await work((data) => stream.send('progress', data), signal);
    stream.send('result', body);
  } catch (err) {
    stream.send('error', streamedError(request, err));
  } finally {
    stream.end();
  }
  return reply;
}

/** The error body and status a thrown value would have had as a plain answer (one mapping for both). */
export function streamedError(request: FastifyRequest, err: unknown): StreamedError {
  const { status, body, unexpected } = errorResponse(err);
  if (unexpected) request.log.error({ err }, 'unexpected error');
  return { ...body, status };
}
