/**
 * A Server-Sent Events client for tests: sends a request to a TestServer and parses the event
 * stream as it arrives, stamping each message with the time it was received (performance.now()),
 * so a test can prove that progress came before the end. A response that is not an event stream
 * (a plain JSON refusal) is kept as text.
 */
import { connect, type Socket } from 'node:net';
import { eventually } from './processes.js';
import { requestParts, type RequestOptions, type TestServer } from './server.js';

export interface SseMessage {
  readonly event: string;
  readonly id: string | undefined;
  readonly data: string;
  /** `data` parsed as JSON (undefined when it is not JSON). */
  readonly json: Record<string, unknown>;
  /** performance.now() when the message was complete. */
  readonly at: number;
}

export interface SseStream {
  readonly status: number;
  readonly headers: Headers;
  /** Messages received so far (the list grows while the stream is open). */
  readonly messages: SseMessage[];
  /** Comment lines received (keep-alives). */
  readonly comments: string[];
  /** The body of a response that is not an event stream. */
  readonly text: string;
  /** Resolves when the stream has ended (by the server, or by `close()`); with `endedAt`. */
  readonly done: Promise<void>;
  readonly endedAt: () => number | undefined;
  /** Waits (bounded) until a message matching `match` has arrived, and returns it. */
  waitFor(match: (message: SseMessage) => boolean, attempts?: number): Promise<SseMessage>;
  close(): void;
}

/** The request's body, token and extra headers, as for `TestServer.request` (Accept is added). */
export type SseRequest = Pick<RequestOptions, 'body' | 'headers' | 'token'>;

/** Parses complete messages out of `buffer`; returns what is left (an incomplete message). */
function parseMessages(
  buffer: string,
  onMessage: (m: Omit<SseMessage, 'at'>) => void,
  onComment: (c: string) => void,
): string {
  let rest = buffer;
  for (let end = rest.indexOf('\n\n'); end >= 0; end = rest.indexOf('\n\n')) {
    const block = rest.slice(0, end);
    rest = rest.slice(end + 2);
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) onComment(line.slice(1).trim());
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length === 0) continue;
    const text = data.join('\n');
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // not JSON
    }
    onMessage({ event, id, data: text, json });
  }
  return rest;
}

export async function openSse(
  server: TestServer,
  method: string,
  path: string,
  options: SseRequest = {},
): Promise<SseStream> {
  const controller = new AbortController();
  const { headers, body } = requestParts(
    { ...options, headers: { accept: 'text/event-stream', ...options.headers } },
    server.token,
  );
  const response = await fetch(`${server.url}${path}`, { method, headers, body, signal: controller.signal });
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  let text = '';
  let endedAt: number | undefined;
  const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const done = (async () => {
    if (!isStream) {
      text = await response.text();
      return;
    }
    const reader = response.body?.getReader();
    if (!reader) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { value, done: finished } = await reader.read();
        if (finished) break;
        buffer += decoder.decode(value, { stream: true });
        const at = performance.now();
        buffer = parseMessages(
          buffer,
          (message) => messages.push({ ...message, at }),
          (comment) => comments.push(comment),
        );
      }
    } catch {
      // aborted by close()
    } finally {
      endedAt = performance.now();
    }
  })();
  if (!isStream) await done;
  return {
    status: response.status,
    headers: response.headers,
    messages,
    comments,
    get text() {
      return text;
    },
    done,
    endedAt: () => endedAt,
    async waitFor(match, attempts = 400) {
      const found = (): SseMessage | undefined => messages.find(match);
      if (!(await eventually(() => found() !== undefined || endedAt !== undefined, attempts))) {
        throw new Error(`no matching message; got ${JSON.stringify(messages.map((m) => m.event))}`);
      }
      const message = found();
      if (!message)
        throw new Error(`the stream ended without a matching message; got ${JSON.stringify(messages)}`);
      return message;
    },
    close() {
      controller.abort();
    },
  };
}

/**
 * A client that opens GET /stream and then never reads: the server's writes pile up in the
 * kernel's buffers and then in its own. Only `socket.destroy()` ends it on this side.
 */
export async function stalledStreamClient(server: TestServer): Promise<Socket> {
  const socket = connect(server.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write(
    `GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  socket.pause();
  return socket;
}

/**
 * The one final message (`result` or `error`) of an ended tool stream, checked to be the last,
 * and the progress messages before it.
 */
export function finalMessage(stream: SseStream): { final: SseMessage; progress: SseMessage[] } {
  const finals = stream.messages.filter((m) => m.event === 'result' || m.event === 'error');
  if (finals.length !== 1 || stream.messages.at(-1) !== finals[0])
    throw new Error(`not exactly one final message, last: ${JSON.stringify(stream.messages)}`);
  const final = finals[0];
  if (final === undefined) throw new Error('no final message');
  return { final, progress: stream.messages.filter((m) => m.event === 'progress') };
}
