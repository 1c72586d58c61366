/**
 * One UDP question and its answer, for the name sources. The socket is connected to the target, so
 * the kernel delivers only datagrams from that address and port (a third host cannot slip in an
 * answer) and reports an ICMP port-unreachable as a refusal at once. The first datagram `accept`
 * takes ends the exchange; datagrams it refuses (garbage, another id) are ignored, and after
 * `maxDatagrams` of them the exchange gives up: a flood costs a bounded amount of work. Nothing
 * after the timeout is read: the socket is closed.
 */
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';

export type UdpOutcome<T> =
  | { readonly kind: 'answer'; readonly value: T }
  | { readonly kind: 'timeout' }
  /** Answers arrived, none of them acceptable. */
  | { readonly kind: 'garbage'; readonly datagrams: number }
  | { readonly kind: 'error'; readonly message: string };

export interface UdpQuery<T> {
  readonly host: string;
  readonly port: number;
  readonly message: Uint8Array;
  readonly timeoutMs: number;
  /** The value an answer gives, or undefined when the datagram is not an answer to this query. */
  readonly accept: (datagram: Buffer) => T | undefined;
  readonly maxDatagrams?: number;
  readonly signal?: AbortSignal;
}

export function udpQuery<T>(query: UdpQuery<T>): Promise<UdpOutcome<T>> {
  const maxDatagrams = query.maxDatagrams ?? 16;
  return new Promise((resolve) => {
    const socket: Socket = createSocket({ type: isIPv6(query.host) ? 'udp6' : 'udp4' });
    let refused = 0;
    let done = false;
    const finish = (outcome: UdpOutcome<T>): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      query.signal?.removeEventListener('abort', onAbort);
      try {
        socket.close();
      } catch {
        // closed before it was bound: nothing to release
      }
      resolve(outcome);
    };
    const onAbort = (): void => {
      finish({ kind: 'error', message: 'aborted' });
    };
    const timer = setTimeout(() => {
      finish(refused > 0 ? { kind: 'garbage', datagrams: refused } : { kind: 'timeout' });
    }, query.timeoutMs);
    socket.on('error', (err: NodeJS.ErrnoException) => {
      finish({ kind: 'error', message: err.code === 'ECONNREFUSED' ? 'refused (port closed)' : err.message });
    });
    socket.on('message', (datagram) => {
      let value: T | undefined;
      try {
        value = query.accept(datagram);
      } catch {
        value = undefined;
      }
      if (value !== undefined) finish({ kind: 'answer', value });
      else if (++refused >= maxDatagrams) finish({ kind: 'garbage', datagrams: refused });
    });
    if (query.signal?.aborted) {
      onAbort();
      return;
    }
    query.signal?.addEventListener('abort', onAbort, { once: true });
    socket.connect(query.port, query.host, () => {
      if (done) return;
      socket.send(query.message, (err) => {
        if (err) finish({ kind: 'error', message: err.message });
      });
    });
  });
}
