/**
 * One SDK transport for every ordinary `/mcp` request (a single JSON-RPC request, answered as
 * JSON): the SDK's `Server` stays connected to it for the life of the app, so a call costs no
 * server, transport, Fetch `Request` or `Response` of its own (the SDK's stateless transport
 * refuses a second request, hence a transport of netkeep's own). It implements the SDK's `Transport`
 * interface; the protocol (message validation, dispatch, errors) stays the SDK's.
 *
 * Clients number their requests themselves, so two clients' requests in flight at once may carry
 * the same id: each request gets an id of this transport's own on the way in, and its answer gets
 * the client's id back on the way out, to the HTTP request that asked.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

interface Pending<Context> {
  readonly clientId: RequestId;
  readonly context: Context;
  readonly resolve: (answer: JSONRPCMessage) => void;
}

export class RequestTransport<Context> implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];

  readonly #pending = new Map<number, Pending<Context>>();
  #next = 0;

  async start(): Promise<void> {
    // Nothing to open: requests arrive through `request`.
  }

  /**
   * Hands `message` to the connected server and resolves with its answer (the result or the
   * JSON-RPC error), under the client's own id. `context` is what the handlers get through
   * `contextOf` for this request.
   */
  request(message: JSONRPCRequest, context: Context): Promise<JSONRPCMessage> {
    const onmessage = this.onmessage;
    if (onmessage === undefined) return Promise.reject(new Error('MCP transport not connected'));
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(id, { clientId: message.id, context, resolve });
      onmessage({ ...message, id });
    });
  }

  /** The context of the request the server knows as `id` (a handler's `extra.requestId`). */
  contextOf(id: RequestId): Context | undefined {
    return typeof id === 'number' ? this.#pending.get(id)?.context : undefined;
  }

  send(message: JSONRPCMessage): Promise<void> {
    // Answers carry the request's id. Anything else (a notification a handler sends about its
    // request, a request to the client) has no stream to go to in stateless JSON mode and is
    // dropped, as the SDK's own transport drops it there.
    if ('id' in message && !('method' in message) && typeof message.id === 'number') {
      const pending = this.#pending.get(message.id);
      if (pending !== undefined) {
        this.#pending.delete(message.id);
        pending.resolve({ ...message, id: pending.clientId });
      }
    }
    return Promise.resolve();
  }

  async close(): Promise<void> {
    // Requests still in flight (the app is closing) get an error, not an answer that never comes.
    for (const { clientId, resolve } of this.#pending.values())
      resolve({
        jsonrpc: '2.0',
        id: clientId,
        error: { code: ErrorCode.ConnectionClosed, message: 'Connection closed' },
      });
    this.#pending.clear();
    this.onclose?.();
  }
}
