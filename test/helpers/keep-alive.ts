/**
 * An HTTP client over keep-alive connections (node:http with its own Agent): the cheapest client
 * Node has, for benches that time a request, and for tests that check a connection is reused.
 * fetch would do for neither: its pool is shared and hidden, and it costs more per request.
 */
import { Agent, request, type IncomingHttpHeaders } from 'node:http';

export interface KeepAliveAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The request went over a connection an earlier request had opened. */
  readonly reusedSocket: boolean;
}

export class KeepAliveClient {
  private readonly agent: Agent;

  /**
   * @param port the server's port on 127.0.0.1
   * @param token sent as the bearer token
   * @param maxSockets connections kept open at most (requests beyond them wait for one)
   */
  constructor(
    private readonly port: number,
    private readonly token: string,
    maxSockets = 1,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  /** Sends `body` (a JSON value, or JSON text as is) and reads the whole answer. */
  send(method: string, path: string, body?: unknown): Promise<KeepAliveAnswer> {
    const payload = body === undefined || typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: this.port,
          method,
          path,
          agent: this.agent,
          headers: {
            authorization: `Bearer ${this.token}`,
            ...(payload === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString('utf8'),
              reusedSocket: req.reusedSocket,
            });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Sends the request and throws unless it answered 200. */
  async ok(method: string, path: string, body?: unknown): Promise<void> {
    const res = await this.send(method, path, body);
    if (res.status !== 200) throw new Error(`${method} ${path} answered ${res.status}: ${res.text}`);
  }

  /** Closes the connections. */
  close(): void {
    this.agent.destroy();
  }
}
