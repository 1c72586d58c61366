/**
 * The delivery loop: sends the outbox's pending rows through their channels, off the scan loop and
 * the request path. Each channel has its own small pool of attempts in flight, so a slow or dead
 * receiver only ever delays its own deliveries.
 *
 * An attempt's outcome is written when it is known: sent (2xx / PUBACK), or another attempt due
 * after an exponential backoff (NOTIFY_RETRY_BASE_MS, doubled per failure, at most an hour, with
 * jitter), or failed after NOTIFY_MAX_ATTEMPTS. Nothing is written when an attempt starts: a row
 * whose attempt was cut short (kill -9, power loss) is still pending and due, and is sent again at
 * the next start with the same deliveryId (receivers de-duplicate on it). An attempt stopped by a
 * graceful shutdown is not counted either.
 */
import type { Logger } from 'pino';
import type { Channel, ChannelName, Delivery } from './model.js';
import { errorMessage } from './model.js';
import type { DueNotification, Outbox } from './outbox.js';
import type { ChangeFeed } from '../events.js';

export interface DeliveryOptions {
  readonly outbox: Outbox;
  readonly channels: readonly Channel[];
  /** NOTIFY_MAX_ATTEMPTS. */
  readonly maxAttempts: number;
  /** NOTIFY_TIMEOUT_MS, per attempt. */
  readonly timeoutMs: number;
  /** NOTIFY_RETRY_BASE_MS: wait before the first retry. */
  readonly retryBaseMs: number;
  readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Attempts in flight per channel. Default 2. */
  readonly concurrency?: number;
  /** Told of the devices whose devLastNotification a sent notification set. */
  readonly feed?: Pick<ChangeFeed, 'publish'>;
  /** Called after each recorded outcome (metrics). */
  readonly onOutcome?: (channel: ChannelName, outcome: 'sent' | 'retry' | 'failed') => void;
}

const maxBackoffMs = 3_600_000;

/** Wait before attempt `failures + 1`, after `failures` failed ones: base x 2^(failures-1), jittered. */
export function backoffMs(failures: number, baseMs: number, random: () => number = Math.random): number {
  const full = Math.min(maxBackoffMs, baseMs * 2 ** Math.max(0, failures - 1));
  // Between 75% and 100%: receivers that come back are not hit by every instance at once.
  return Math.round(full * (0.75 + 0.25 * random()));
}

export class DeliveryLoop {
  private readonly inFlight = new Map<ChannelName, Map<number, Promise<void>>>();
  private readonly concurrency: number;
  private readonly stopController = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private pumpScheduled = false;
  private started = false;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;

  constructor(private readonly options: DeliveryOptions) {
    this.concurrency = options.concurrency ?? 2;
    for (const channel of options.channels) this.inFlight.set(channel.name, new Map());
  }

  /** Starts sending; rows of channels that are no longer configured are failed first. */
  async start(configured: readonly ChannelName[], all: readonly ChannelName[]): Promise<void> {
    for (const name of all) {
      if (configured.includes(name)) continue;
      const failed = await this.options.outbox.failPending(name, `channel ${name} is not configured`);
      if (failed > 0)
        this.options.logger.warn(
          { event: 'notifications-orphaned', channel: name, count: failed },
          'pending notifications of a channel that is no longer configured were marked failed',
        );
    }
    this.started = true;
    this.kick();
  }

  /** Looks for due rows soon (after the current turn of the event loop). */
  kick(): void {
    if (!this.started || this.pumpScheduled || this.stopController.signal.aborted) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Stops: no new attempts, attempts in flight aborted (not counted), waits for them to settle. */
  async stop(): Promise<void> {
    this.stopController.abort();
    clearTimeout(this.timer);
    await this.pumping;
    await Promise.allSettled([...this.inFlight.values()].flatMap((m) => [...m.values()]));
  }

  /** Whether `stop` was called (read again after each await). */
  private stopping(): boolean {
    return this.stopController.signal.aborted;
  }

  /** One pump at a time (the store answers asynchronously): a pump asked for meanwhile runs after it. */
  private pump(): void {
    if (this.pumping !== undefined) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = this.pumpOnce()
      .catch((err: unknown) => {
        this.options.logger.error({ err }, 'reading the outbox failed');
      })
      .finally(() => {
        this.pumping = undefined;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.pump();
        }
      });
  }

  private async pumpOnce(): Promise<void> {
    if (this.stopController.signal.aborted) return;
    const now = Date.now();
    for (const channel of this.options.channels) {
      const running = this.inFlight.get(channel.name);
      if (running === undefined) continue;
      const free = this.concurrency - running.size;
      if (free <= 0) continue;
      // Rows in flight are still pending and due: left out by id.
      const inFlight = new Set(running.keys());
      const due = await this.options.outbox.due(channel.name, now, free, inFlight);
      if (this.stopping()) return;
      for (const row of due) {
        const attempt = this.attempt(channel, row).finally(() => {
          running.delete(row.id);
          this.kick();
        });
        running.set(row.id, attempt);
      }
    }
    await this.scheduleNext();
  }

  /** A timer for the earliest pending row that is not due yet. */
  private async scheduleNext(): Promise<void> {
    const next = await this.options.outbox.nextDue();
    if (next === null || this.stopping()) return;
    const at = Math.max(next, Date.now() + 50);
    if (this.timer !== undefined && this.timerAt <= at) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.pump();
    }, at - Date.now());
    this.timer.unref();
  }

  private async attempt(channel: Channel, row: DueNotification): Promise<void> {
    const { outbox, logger, maxAttempts } = this.options;
    const startedAt = new Date();
    const delivery: Delivery = {
      deliveryId: row.deliveryId,
      sentAt: startedAt.toISOString(),
      events: row.events,
    };
    const signal = AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs), this.stopController.signal]);
    let error: string | undefined;
    try {
      await channel.send(delivery, signal);
    } catch (err) {
      if (this.stopController.signal.aborted) return;
      error = signal.aborted
        ? `no confirmation within ${this.options.timeoutMs} ms (NOTIFY_TIMEOUT_MS)`
        : errorMessage(err);
    }
    const attempts = row.attempts + 1;
    const context = { channel: channel.name, deliveryId: row.deliveryId, attempts };
    try {
      if (error === undefined) {
        const macs = [...new Set(row.events.map((e) => e.mac))];
        await outbox.sent(row.id, new Date(), macs);
        // devLastNotification changed: the caches learn it from the store, listeners from here.
        this.options.feed?.publish('devices', { created: [], updated: macs });
        logger.info(
          { event: 'notification-sent', ...context, events: row.events.length },
          'notification sent',
        );
        this.options.onOutcome?.(channel.name, 'sent');
      } else if (attempts >= maxAttempts) {
        await outbox.failed(row.id, error);
        logger.error({ event: 'notification-failed', ...context, error }, 'notification failed for good');
        this.options.onOutcome?.(channel.name, 'failed');
      } else {
        const wait = backoffMs(attempts, this.options.retryBaseMs);
        await outbox.retryLater(row.id, Date.now() + wait, error);
        logger.warn(
          { event: 'notification-retry', ...context, error, retryInMs: wait },
          'notification attempt failed; retrying later',
        );
        this.options.onOutcome?.(channel.name, 'retry');
      }
    } catch (err) {
      // The database went away (shutdown): the row stays pending and is sent again next start.
      logger.error({ err, ...context }, 'recording a notification outcome failed');
    }
  }
}
