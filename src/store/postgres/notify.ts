/**
 * Change notification between netkeep servers on one PostgreSQL database: what one
 * server committed, the others hear through LISTEN/NOTIFY, to drop what their caches hold and
 * to carry it on their /stream feeds.
 *
 * A message sent inside a transaction is delivered when (and only if) it commits, which is the
 * order the caches need: a server never hears of a write it cannot read yet. Each server ignores
 * its own messages (it published them in-process already). PostgreSQL caps a payload at 8000
 * bytes: a larger message goes out as a `resync` (everything may have changed). A listener whose
 * connection drops may have missed messages; it reconnects by itself and reports a `resync` first.
 */
import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers';
import type pg from 'pg';
import type { PostgresPool, StoreLog } from './pool.js';

/** What a server hears from the others. */
export type RemoteChange =
  | { readonly kind: 'message'; readonly from: string; readonly body: unknown }
  /** Something changed that no message describes (too large, or missed while disconnected). */
  | { readonly kind: 'resync'; readonly from: string; readonly reason: 'overflow' | 'reconnected' };

/** The channel every netkeep server of a database listens on. */
export const changeChannel = 'netkeep_changes';

/** PostgreSQL's limit is 8000 bytes; keep room for the envelope. */
const maxPayloadBytes = 7800;

interface Envelope {
  readonly from: string;
  /**
   * The sender's count: PostgreSQL delivers two equal payloads of one transaction once, and two
   * equal messages sent together are still two.
   */
  readonly seq?: number;
  readonly body?: unknown;
  readonly overflow?: true;
}

export interface ChangeChannelOptions {
  readonly onChange: (change: RemoteChange) => void;
  readonly log?: StoreLog;
  /** This server's id (default: a random one): its own messages are not reported to it. */
  readonly serverId?: string;
  /** First delay before reconnecting a dropped listener; doubled up to 30 s. */
  readonly reconnectMs?: number;
}

export class PostgresChangeChannel {
  readonly serverId: string;
  private listener: pg.Client | undefined;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private delayMs: number;
  private seq = 0;
  private outgoing: { payload: string; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private sending = false;

  constructor(
    private readonly store: PostgresPool,
    private readonly options: ChangeChannelOptions,
  ) {
    this.serverId = options.serverId ?? randomUUID();
    this.delayMs = options.reconnectMs ?? 500;
  }

  /** Starts listening; resolves once LISTEN is in place (rejects, STORE_UNAVAILABLE, if it cannot be). */
  async start(): Promise<void> {
    await this.listen();
  }

  private async listen(): Promise<void> {
    const client = this.store.dedicatedClient();
    client.on('notification', (message) => {
      if (message.channel === changeChannel) this.receive(message.payload ?? '');
    });
    // A connection lost later: reconnect (an error before connect() resolves is its rejection).
    const lost = (err?: Error): void => {
      if (this.listener !== client) return;
      this.listener = undefined;
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      client.end().catch(() => undefined);
      if (this.stopped) return;
      this.options.log?.warn(
        {
          store: this.store.address.label,
          err: err === undefined ? undefined : this.store.scrub(err.message),
        },
        'PostgreSQL change listener lost its connection; reconnecting',
      );
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => {
      lost();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${changeChannel}`);
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      throw this.store.translate(err);
    }
    this.listener = client;
  }

  private scheduleReconnect(): void {
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.listen().then(
        () => {
          this.delayMs = this.options.reconnectMs ?? 500;
          // What was sent while nobody listened is lost: everything may have changed.
          this.options.onChange({ kind: 'resync', from: '', reason: 'reconnected' });
        },
        () => {
          if (this.stopped) return;
          this.delayMs = Math.min(this.delayMs * 2, 30_000);
          this.scheduleReconnect();
        },
      );
    }, this.delayMs);
    this.retryTimer.unref();
  }

  private receive(payload: string): void {
    let envelope: Envelope;
    try {
      envelope = JSON.parse(payload) as Envelope;
    } catch {
      return; // not netkeep's: someone else NOTIFYs on the channel
    }
    if (typeof envelope.from !== 'string' || envelope.from === this.serverId) return;
    this.options.onChange(
      envelope.overflow === true
        ? { kind: 'resync', from: envelope.from, reason: 'overflow' }
        : { kind: 'message', from: envelope.from, body: envelope.body },
    );
  }

  /**
   * Tells the other servers about `body` (JSON). On `client` inside its transaction, the message
   * goes out at COMMIT and is dropped by a ROLLBACK. Without one, it is queued and sent with the
   * others of the same turn of the event loop, in order, in one transaction that does not wait for
   * the disk (a message is not durable anyway: a listener that was away misses it); settles once
   * sent. A NOTIFY holds a database-wide lock from its commit until the commit is done: one
   * transaction per message, each waiting for an fsync, would serialise every server's writes.
   */
  async publish(body: unknown, client?: pg.PoolClient): Promise<void> {
    let payload = JSON.stringify({ from: this.serverId, seq: this.seq++, body } satisfies Envelope);
    if (Buffer.byteLength(payload) > maxPayloadBytes) {
      payload = JSON.stringify({ from: this.serverId, overflow: true } satisfies Envelope);
    }
    if (client !== undefined) {
      await client.query('SELECT pg_notify($1, $2)', [changeChannel, payload]);
      return;
    }
    return new Promise<void>((resolve, reject) => {
      this.outgoing.push({ payload, resolve, reject });
      this.sendQueued();
    });
  }

  /** A hint that may be lost (change-log.ts): sent as `publish` sends. */
  hint(body: unknown): Promise<void> {
    return this.publish(body);
  }

  /** Sends the queued messages: one batch in flight at a time (their order is kept). */
  private sendQueued(): void {
    if (this.sending || this.outgoing.length === 0) return;
    this.sending = true;
    setImmediate(() => {
      const batch = this.outgoing;
      this.outgoing = [];
      this.sendBatch(batch.map((m) => m.payload))
        .then(
          () => {
            for (const message of batch) message.resolve();
          },
          (err: unknown) => {
            for (const message of batch) message.reject(err);
          },
        )
        .finally(() => {
          this.sending = false;
          this.sendQueued();
        });
    });
  }

  /** One round trip: the NOTIFYs in one transaction that does not wait for its fsync. */
  private async sendBatch(payloads: readonly string[]): Promise<void> {
    const client = await this.store.connect();
    let broken = false;
    try {
      const notifies = payloads.map((p) => `NOTIFY ${changeChannel}, ${client.escapeLiteral(p)};`).join(' ');
      await client.query(`BEGIN; SET LOCAL synchronous_commit = off; ${notifies} COMMIT`);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw this.store.translate(err);
    } finally {
      client.release(broken);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    const client = this.listener;
    this.listener = undefined;
    if (client !== undefined) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
    }
  }
}
