/**
 * The live hub: turns the change feed into numbered messages for `GET /stream` and keeps the last
 * ones for replay. No HTTP here: the route plugin (routes.ts) writes the messages to its clients.
 *
 * - `device-event`: one per event a scan cycle wrote, as the webhook's event object (the device's
 *   name, owner, type, vendor, IP and status read once per cycle, after the cycle committed);
 * - `scan`: a finished cycle's summary;
 * - `device`: an API write, `{mac, change}`;
 * - `devices-changed`: many devices changed at once (a CSV import), `{created, updated}` counts:
 *   one message for the whole import, not one per device.
 *
 * Ids are `<boot>-<n>`: n counts up from 1 in this process, and boot tells one run of the server
 * from the next, so a client that reconnects after a restart is told it missed messages instead
 * of being handed the wrong ones. The replay buffer is a ring of the last `replayLimit` messages.
 * Every message published within one tick of the event loop (a whole cycle's events, the cycle's
 * summary) goes to each subscriber as one batch at the end of the tick: a client gets one write per
 * tick, however many publications it held, and the batch is formatted once for every client. That
 * is what lets the stream writer bound each client's unsent bytes (sse.ts) without cutting off a
 * client that reads.
 */
import type { ChangeEvents, ChangeFeed, ScanEventRecord } from '../events.js';

export type LiveEventName = 'device-event' | 'scan' | 'device' | 'devices-changed';

export interface LiveMessage {
  /** `<boot>-<n>`, the SSE `id:`. */
  readonly id: string;
  readonly event: LiveEventName;
  /** The message's data as JSON text (serialised once for every client). */
  readonly json: string;
}

/** The device fields a `device-event` carries (the webhook event's `device`). */
export interface DeviceSummary {
  readonly devName: string;
  readonly devOwner: string;
  readonly devType: string;
  readonly devVendor: string;
  readonly devLastIP: string;
  readonly devStatus: string;
}

/** The webhook's event object. */
export interface DeviceEventJson {
  readonly type: string;
  readonly time: string;
  readonly mac: string;
  readonly ip: string;
  readonly additionalInfo: string;
  readonly device: DeviceSummary | null;
}

export type LiveListener = (batch: readonly LiveMessage[]) => void;

/** What a subscriber missed: the messages after its last id, or `gap` when they are gone. */
export type Replay =
  | { readonly kind: 'messages'; readonly messages: readonly LiveMessage[] }
  | { readonly kind: 'gap'; readonly reason: string };

export interface LiveHubOptions {
  readonly feed: ChangeFeed;
  /** Messages kept for replay (STREAM_REPLAY_EVENTS). */
  readonly replayLimit: number;
  /** The summaries of these devices, read after the cycle committed; missing ones are left out. */
  readonly describeDevices: (macs: readonly string[]) => Promise<ReadonlyMap<string, DeviceSummary>>;
  /** Distinguishes this run's ids from the previous run's. Default: the start time, base 36. */
  readonly bootId?: string;
}

export function deviceEventJson(event: ScanEventRecord, device: DeviceSummary | undefined): DeviceEventJson {
  return {
    type: event.type,
    // Stored times have whole seconds: written as the API writes them elsewhere (no ".000").
    time: event.time.toISOString().replace(/\.000Z$/, 'Z'),
    mac: event.mac,
    ip: event.ip,
    additionalInfo: event.additionalInfo,
    device: device ?? null,
  };
}

export class LiveHub {
  readonly bootId: string;
  /** The ring: `ring[(seq - 1) % limit]` holds message `seq` while it is among the last `limit`. */
  private readonly ring: LiveMessage[] = [];
  private lastSeq = 0;
  /** The newest message handed to the subscribers (the rest wait in `pending` for the tick's end). */
  private deliveredSeq = 0;
  private pending: LiveMessage[] = [];
  private readonly listeners = new Set<LiveListener>();
  private readonly unsubscribe: (() => void)[];

  constructor(private readonly options: LiveHubOptions) {
    this.bootId = options.bootId ?? Date.now().toString(36);
    const { feed } = options;
    this.unsubscribe = [
      feed.subscribe('scan-applied', (applied) => {
        this.onScanApplied(applied);
      }),
      feed.subscribe('scan-finished', (summary) => {
        this.inOrder([['scan', summary]]);
      }),
      feed.subscribe('device', (change) => {
        this.inOrder([['device', { mac: change.mac, change: change.change }]]);
      }),
      feed.subscribe('devices', (change) => {
        this.inOrder([
          ['devices-changed', { created: change.created.length, updated: change.updated.length }],
        ]);
      }),
    ];
  }

  /** The id of the newest message delivered to the subscribers ('' before the first). */
  get lastId(): string {
    return this.deliveredSeq === 0 ? '' : this.idOf(this.deliveredSeq);
  }

  get subscribers(): number {
    return this.listeners.size;
  }

  /** Starts delivering new messages to `listener`; returns the function that stops it. */
  subscribe(listener: LiveListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * The messages after `lastEventId` (a client's Last-Event-ID) up to the newest delivered one, or
   * why they cannot be given. Those still pending reach a client that subscribes in the same tick
   * with the tick's batch.
   */
  replayAfter(lastEventId: string): Replay {
    const match = /^([0-9a-z]+)-(\d{1,15})$/.exec(lastEventId);
    if (match?.[1] !== this.bootId) {
      return {
        kind: 'gap',
        reason: match ? 'The server restarted since that id.' : 'That id was not issued by this server.',
      };
    }
    const seq = Number(match[2]);
    if (seq > this.deliveredSeq) return { kind: 'gap', reason: 'That id was not issued by this server.' };
    const oldest = Math.max(1, this.lastSeq - this.ring.length + 1);
    if (seq < oldest - 1) {
      return { kind: 'gap', reason: 'Messages after that id are no longer in the replay buffer.' };
    }
    const messages: LiveMessage[] = [];
    for (let s = seq + 1; s <= this.deliveredSeq; s++) {
      const message = this.ring[(s - 1) % this.options.replayLimit];
      if (message) messages.push(message);
    }
    return { kind: 'messages', messages };
  }

  /** Stops listening to the feed and forgets every subscriber. */
  close(): void {
    for (const stop of this.unsubscribe) stop();
    this.listeners.clear();
  }

  private onScanApplied(applied: ChangeEvents['scan-applied']): void {
    if (applied.events.length === 0) return;
    const devices = this.options
      .describeDevices([...new Set(applied.events.map((event) => event.mac))])
      .catch(() => new Map<string, DeviceSummary>());
    this.inOrder(
      devices.then((found) =>
        applied.events.map(
          (event) => ['device-event', deviceEventJson(event, found.get(event.mac))] as const,
        ),
      ),
    );
  }

  /**
   * Publishes in the order the feed told: messages whose content is still being read (a cycle's
   * device summaries) hold back those that come after them.
   */
  private inOrder(
    items:
      | ReadonlyArray<readonly [LiveEventName, unknown]>
      | Promise<ReadonlyArray<readonly [LiveEventName, unknown]>>,
  ): void {
    if (this.waiting === undefined && !(items instanceof Promise)) {
      this.publish(items);
      return;
    }
    const waiting = (this.waiting ?? Promise.resolve()).then(async () => {
      this.publish(await items);
    });
    this.waiting = waiting;
    void waiting.finally(() => {
      if (this.waiting === waiting) this.waiting = undefined;
    });
  }

  /** The tail of the messages waiting for their content (see `inOrder`). */
  private waiting: Promise<void> | undefined;

  private publish(items: ReadonlyArray<readonly [LiveEventName, unknown]>): void {
    if (items.length === 0) return;
    if (this.pending.length === 0) process.nextTick(this.deliver);
    for (const [event, data] of items) {
      const message: LiveMessage = { id: this.idOf(++this.lastSeq), event, json: JSON.stringify(data) };
      if (this.options.replayLimit > 0) this.ring[(this.lastSeq - 1) % this.options.replayLimit] = message;
      this.pending.push(message);
    }
  }

  /** Hands the tick's messages to every subscriber as one batch. */
  private readonly deliver = (): void => {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.deliveredSeq = this.lastSeq;
    for (const listener of this.listeners) {
      try {
        listener(batch);
      } catch {
        // A client's write failing is that client's end, never the other clients'.
      }
    }
  };

  private idOf(seq: number): string {
    return `${this.bootId}-${seq}`;
  }
}
