/**
 * Raw HTTP/1.1 over a TCP socket (node:net), for what fetch cannot send: malformed request lines,
 * missing Host, absolute-form targets, slow or endless bodies, many idle connections.
 */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  /** 0 when the connection closed without an answer. */
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Parsed JSON body, or undefined. */
  readonly json: Record<string, unknown> | undefined;
  /** The server closed the connection (end or reset). */
  readonly closed: boolean;
  /** Bytes of the request this side managed to write. */
  readonly bytesWritten: number;
}

export interface RawOptions {
  /** After `head`, written piece by piece: `pieces` times `piece`, `intervalMs` apart. */
  readonly piece?: Buffer | string;
  readonly pieces?: number;
  readonly intervalMs?: number;
  /** Give up waiting for the server after this long (the answer is then what arrived). */
  readonly waitMs?: number;
  /** Wait for the server to close the connection, not just for a complete answer. */
  readonly untilClose?: boolean;
}

/** True once `raw` holds a whole answer with a Content-Length body. */
function complete(raw: string): boolean {
  const split = raw.indexOf('\r\n\r\n');
  const length = /\r\ncontent-length: *(\d+)/i.exec(raw.slice(0, split))?.[1];
  return split >= 0 && length !== undefined && raw.length - split - 4 >= Number(length);
}

function parse(raw: string, closed: boolean, bytesWritten: number): RawResponse {
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) return { status: 0, headers: {}, body: raw, json: undefined, closed, bytesWritten };
  const [statusLine = '', ...headerLines] = raw.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = raw.slice(split + 4);
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body, json, closed, bytesWritten };
}

/** Opens a connection (resolves once connected). */
export function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/**
 * Sends `head` (request line, headers, blank line, any body start) and then the optional pieces;
 * resolves with the first answer once it is complete (or, with `untilClose`, once the server closed
 * the connection), or after `waitMs`.
 */
export async function rawRequest(port: number, head: string, options: RawOptions = {}): Promise<RawResponse> {
  const socket = await openSocket(port);
  let received = '';
  const state = { closed: false };
  let bytesWritten = 0;
  const done = new Promise<void>((resolve) => {
    socket.on('data', (data) => {
      received += data.toString('latin1');
      if (!options.untilClose && complete(received)) resolve();
    });
    socket.on('error', () => undefined); // EPIPE/ECONNRESET while writing: the server closed
    socket.on('close', () => {
      state.closed = true;
      resolve();
    });
    setTimeout(resolve, options.waitMs ?? 10_000).unref();
  });
  socket.write(head);
  bytesWritten += Buffer.byteLength(head);
  if (options.piece !== undefined) {
    const piece = options.piece;
    void (async () => {
      const open = (): boolean => !state.closed && !socket.destroyed;
      for (let i = 0; i < (options.pieces ?? 1) && open(); i++) {
        if (options.intervalMs) await new Promise((resolve) => setTimeout(resolve, options.intervalMs));
        if (!open()) break;
        const flushed = socket.write(piece);
        bytesWritten += Buffer.byteLength(piece);
        if (!flushed) await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve));
      }
    })();
  }
  await done;
  socket.destroy();
  return parse(received, state.closed, bytesWritten);
}
