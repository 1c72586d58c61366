/**
 * A notification receiver on 127.0.0.1 for the HTTP channels (webhook, ntfy, Apprise): records
 * every request (method, path, headers, exact body text) and answers with `status` (200 unless a
 * test sets another, e.g. 500 to play a receiver that is down). `close()` stops it; `listen()`
 * again on the same port brings it back.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './processes.js';

export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  /** Status of the next answers. */
  status = 200;
  /** Milliseconds to wait before answering. */
  delayMs = 0;
  private server: Server | undefined;
  private boundPort = 0;

  get port(): number {
    return this.boundPort;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.boundPort}${path}`;
  }

  /** Listens on `port` (0: a free one). */
  async listen(port = this.boundPort): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.requests.push({
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        const answer = (): void => {
          res.writeHead(this.status, { 'content-type': 'text/plain' });
          res.end(this.status < 300 ? 'ok' : 'receiver error');
        };
        if (this.delayMs > 0) setTimeout(answer, this.delayMs);
        else answer();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    this.server = server;
    this.boundPort = (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
  }

  on(path: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Waits (bounded) until `count` requests reached `path`; returns them. */
  async waitFor(path: string, count = 1, attempts = 400): Promise<ReceivedRequest[]> {
    const ok = await eventually(() => this.on(path).length >= count, attempts, 50);
    if (!ok) throw new Error(`${path}: ${this.on(path).length} requests, expected ${count}`);
    return this.on(path);
  }
}

export async function startReceiver(): Promise<Receiver> {
  const receiver = new Receiver();
  await receiver.listen(0);
  return receiver;
}
