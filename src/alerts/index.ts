/**
 * The alert engine, wired from the configuration: the outbox (written by the scan cycle), the
 * channels that are configured, the delivery loop, the MQTT bridge for Home Assistant, and the
 * outbox's retention (NOTIFY_RETENTION_DAYS, at start and daily).
 * `src/server.ts` creates it once; `stop()` is part of the graceful shutdown (before the database
 * closes).
 */
import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { DailyTask } from '../daily-task.js';
import { DomainError } from '../errors.js';
import type { ChangeFeed } from '../events.js';
import type { DeviceTotals } from '../store/devices.js';
import type { AlertOutboxStore } from '../store/outbox.js';
import type { DeviceReadouts } from '../store/readouts.js';
import type { EventType } from '../scanner/state-machine.js';
import { appriseChannel } from './channels/apprise.js';
import { redactedUrl } from './channels/http.js';
import { ntfyChannel } from './channels/ntfy.js';
import { webhookChannel } from './channels/webhook.js';
import { DeliveryLoop } from './delivery.js';
import { channelNames, errorMessage, type Channel, type ChannelName } from './model.js';
import { MqttBridge } from './mqtt.js';
import { Outbox, type OutboxPruneResult } from './outbox.js';

export type AlertsConfig = Pick<
  Config,
  | 'NOTIFY_EVENTS'
  | 'NOTIFY_MAX_ATTEMPTS'
  | 'NOTIFY_TIMEOUT_MS'
  | 'NOTIFY_RETRY_BASE_MS'
  | 'NOTIFY_RETENTION_DAYS'
  | 'NOTIFY_WEBHOOK_URL'
  | 'NOTIFY_WEBHOOK_SECRET'
  | 'NOTIFY_NTFY_URL'
  | 'NOTIFY_NTFY_TOKEN'
  | 'NOTIFY_APPRISE_URL'
  | 'MQTT_URL'
  | 'MQTT_TOPIC_PREFIX'
  | 'MQTT_DISCOVERY_PREFIX'
>;

export interface AlertsOptions {
  /** The outbox's rows. */
  readonly outboxStore: AlertOutboxStore;
  /** The devices the MQTT bridge publishes. */
  readonly readouts: Pick<DeviceReadouts, 'trackedDevices' | 'trackedDevice'>;
  readonly config: AlertsConfig;
  readonly logger: Logger;
  readonly feed?: ChangeFeed;
  /** The device counters, for the MQTT count sensors (the device store's totals). */
  readonly totals?: () => Promise<DeviceTotals>;
  /**
   * Counts each notification's outcome per channel (metrics): `sent` or `failed` when delivery
   * ends, `retry` per failed attempt that will be retried, `skipped` when a cycle records one.
   */
  readonly onNotification?: (channel: ChannelName, status: 'sent' | 'failed' | 'retry' | 'skipped') => void;
  /** Clock of the outbox retention (tests control it). Default: the system clock. */
  readonly now?: () => Date;
}

/** Rows deleted per transaction by the outbox retention (each pause of the event loop stays short). */
const pruneBatchSize = 1000;

export interface TestResult {
  readonly channel: ChannelName;
  readonly ok: boolean;
  readonly error: string | null;
}

export class Alerts {
  readonly outbox: Outbox;
  readonly channels: readonly Channel[];
  private readonly delivery: DeliveryLoop;
  private readonly mqtt: MqttBridge | undefined;
  private readonly retention: DailyTask<OutboxPruneResult>;
  private starting: Promise<void> | undefined;

  constructor(private readonly options: AlertsOptions) {
    const { config, logger } = options;
    const channels: Channel[] = [];
    if (config.NOTIFY_WEBHOOK_URL !== '')
      channels.push(webhookChannel(config.NOTIFY_WEBHOOK_URL, config.NOTIFY_WEBHOOK_SECRET));
    if (config.NOTIFY_NTFY_URL !== '')
      channels.push(ntfyChannel(config.NOTIFY_NTFY_URL, config.NOTIFY_NTFY_TOKEN));
    if (config.NOTIFY_APPRISE_URL !== '') channels.push(appriseChannel(config.NOTIFY_APPRISE_URL));
    if (config.MQTT_URL !== '') {
      this.mqtt = new MqttBridge({
        url: config.MQTT_URL,
        topicPrefix: config.MQTT_TOPIC_PREFIX,
        discoveryPrefix: config.MQTT_DISCOVERY_PREFIX,
        readouts: options.readouts,
        feed: options.feed,
        logger: logger.child({ component: 'mqtt' }),
        timeoutMs: config.NOTIFY_TIMEOUT_MS,
        totals: options.totals,
      });
      channels.push(this.mqtt.channel);
    }
    this.channels = channels;
    this.outbox = new Outbox(options.outboxStore, {
      channels: channels.map((c) => c.name),
      enabledTypes: new Set<EventType>(config.NOTIFY_EVENTS),
      onRecorded: () => {
        this.delivery.kick();
      },
      onSkipped: (channel) => options.onNotification?.(channel, 'skipped'),
    });
    this.delivery = new DeliveryLoop({
      outbox: this.outbox,
      channels,
      maxAttempts: config.NOTIFY_MAX_ATTEMPTS,
      timeoutMs: config.NOTIFY_TIMEOUT_MS,
      retryBaseMs: config.NOTIFY_RETRY_BASE_MS,
      logger: logger.child({ component: 'alerts' }),
      feed: options.feed,
      onOutcome: options.onNotification,
    });
    this.retention = new DailyTask(() => this.pruneOutbox(), { notifications: 0, payloads: 0 });
  }

  /** Connects MQTT and starts delivering what the outbox holds (including rows from before a crash). */
  async start(): Promise<void> {
    const names = this.channels.map((c) => c.name);
    this.options.logger.info(
      {
        event: 'alerts-channels',
        channels: names,
        // Where each HTTP channel points, without user, password or query (tokens hide there).
        targets: Object.fromEntries(
          (
            [
              ['webhook', this.options.config.NOTIFY_WEBHOOK_URL],
              ['ntfy', this.options.config.NOTIFY_NTFY_URL],
              ['apprise', this.options.config.NOTIFY_APPRISE_URL],
              ['mqtt', this.options.config.MQTT_URL],
            ] as const
          )
            .filter(([, url]) => url !== '')
            .map(([name, url]) => [name, redactedUrl(url)]),
        ),
      },
      names.length > 0 ? `notification channels: ${names.join(', ')}` : 'no notification channel configured',
    );
    this.mqtt?.start();
    this.retention.start();
    this.starting = this.delivery.start(names, channelNames);
    await this.starting;
  }

  async stop(): Promise<void> {
    // The start's writes (the orphaned channels' rows) finish before the database may close.
    await this.starting?.catch(() => undefined);
    await this.retention.stop();
    await this.delivery.stop();
    await this.mqtt?.stop();
  }

  /**
   * NOTIFY_RETENTION_DAYS: deletes sent, failed and skipped notifications written longer ago than
   * that, with their payloads, in batches. Runs at start and daily (`start()`); pending rows stay.
   */
  private async pruneOutbox(): Promise<OutboxPruneResult> {
    const now = this.options.now?.() ?? new Date();
    const before = new Date(now.getTime() - this.options.config.NOTIFY_RETENTION_DAYS * 86_400_000);
    let notifications = 0;
    let payloads = 0;
    try {
      for (;;) {
        const batch = await this.outbox.pruneBatch(before, pruneBatchSize);
        notifications += batch.notifications;
        payloads += batch.payloads;
        if (batch.notifications < pruneBatchSize) break;
        await setImmediate();
      }
    } catch (err) {
      this.options.logger.error({ err }, 'notification pruning failed');
      throw err;
    }
    if (notifications > 0)
      this.options.logger.info(
        { event: 'notifications-pruned', notifications, payloads },
        'old notifications pruned',
      );
    return { notifications, payloads };
  }

  /**
   * Sends one test delivery to every configured channel now, in parallel, each within
   * NOTIFY_TIMEOUT_MS. Nothing is stored. A failing receiver is a result (`ok: false`), not an error.
   */
  async test(): Promise<TestResult[]> {
    if (this.channels.length === 0)
      throw new DomainError(
        'conflict',
        'No notification channel is configured: set NOTIFY_WEBHOOK_URL, NOTIFY_NTFY_URL, NOTIFY_APPRISE_URL or MQTT_URL.',
        { code: 'NO_NOTIFICATION_CHANNEL' },
      );
    const delivery = { deliveryId: randomUUID(), sentAt: new Date().toISOString(), events: [], test: true };
    const timeoutMs = this.options.config.NOTIFY_TIMEOUT_MS;
    return Promise.all(
      this.channels.map(async (channel): Promise<TestResult> => {
        const signal = AbortSignal.timeout(timeoutMs);
        try {
          await channel.send(delivery, signal);
          return { channel: channel.name, ok: true, error: null };
        } catch (err) {
          const error = signal.aborted
            ? `no confirmation within ${timeoutMs} ms (NOTIFY_TIMEOUT_MS)`
            : errorMessage(err);
          return { channel: channel.name, ok: false, error };
        }
      }),
    );
  }
}
