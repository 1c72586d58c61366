/**
 * MQTT: the `mqtt` notification channel and Home Assistant discovery, over one mqtt.js client.
 *
 * Topics (P = MQTT_TOPIC_PREFIX, D = MQTT_DISCOVERY_PREFIX, m = the MAC's 12 hex digits):
 * - `P/status`: retained `online` once connected; the broker publishes the retained last will
 *   `offline` if netkeep vanishes, and a graceful stop publishes it too.
 * - `D/device_tracker/netkeep_m/config`: retained discovery config per device that is not archived,
 *   published at every connect and again whenever Home Assistant announces itself (`D/status` =
 *   `online`); an empty retained config when the device is deleted or archived (the entity goes).
 * - `P/device/m/state`: retained `home` / `not_home`, at connect for every device and after each
 *   cycle for devices whose presence changed; `P/device/m/attributes`: retained
 *   `{ip, vendor, last_seen, status}` alongside.
 * - `D/sensor/netkeep_<counter>/config`: retained discovery config of the count sensors (all,
 *   online, down, new, archived, favorites), published with the device configs; `P/sensor/netkeep/
 *   state`: retained `{all, online, down, new, archived, favorites}` at connect, after each scan
 *   cycle and after API writes (coalesced). NetAlertX's MQTT plugin publishes its counts the same
 *   way (front/plugins/_publisher_mqtt/mqtt.py: one sensor per counter, one JSON state topic, each
 *   sensor's value_template picking its counter).
 * - `P/event`: each notified event (the outbox delivery of this channel), QoS 1, not retained;
 *   the delivery is confirmed when every event got its PUBACK.
 * - `P/test`: the test delivery of POST /notifications/test.
 *
 * Presence and device changes come from the change feed (after commit); events come from the outbox.
 */
import { randomBytes } from 'node:crypto';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { DeviceReadouts, TrackedDevice } from '../store/readouts.js';
import { connect, type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { DeviceTotals } from '../store/devices.js';
import { deviceStatus, type DeviceGroup } from '../devices/status.js';
import type { ChangeFeed } from '../events.js';
import { redactedUrl } from './channels/http.js';
import { errorMessage, type Channel, type Delivery } from './model.js';

export interface MqttOptions {
  /** MQTT_URL (mqtt:// or mqtts://, credentials in it). */
  readonly url: string;
  readonly topicPrefix: string;
  readonly discoveryPrefix: string;
  /** The devices' state as published (the store's readouts). */
  readonly readouts: Pick<DeviceReadouts, 'trackedDevices' | 'trackedDevice'>;
  readonly feed?: ChangeFeed;
  readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Connect timeout (NOTIFY_TIMEOUT_MS). */
  readonly timeoutMs: number;
  /** Wait between reconnection attempts. Default 5000 ms. */
  readonly reconnectMs?: number;
  /** The device counters (the device store's totals, as GET /devices/totals reads them). */
  readonly totals?: () => Promise<DeviceTotals>;
}

/** The Home Assistant count sensors: each counter, the totals group it shows, its icon. */
const countSensors: readonly { counter: string; group: DeviceGroup; icon: string }[] = [
  { counter: 'all', group: 'my', icon: 'wifi' },
  { counter: 'online', group: 'connected', icon: 'wifi-check' },
  { counter: 'down', group: 'down', icon: 'wifi-cancel' },
  { counter: 'new', group: 'new', icon: 'wifi-plus' },
  { counter: 'archived', group: 'archived', icon: 'wifi-lock' },
  { counter: 'favorites', group: 'favorites', icon: 'star' },
];

type TrackedDeviceRow = TrackedDevice;

export interface Topics {
  readonly status: string;
  readonly event: string;
  readonly test: string;
  readonly discoveryStatus: string;
  config(mac: string): string;
  state(mac: string): string;
  attributes(mac: string): string;
  countConfig(counter: string): string;
  readonly countState: string;
}

/** The MAC's 12 hex digits, lowercase. */
export function mac12(mac: string): string {
  return mac.replace(/[^0-9a-fA-F]/g, '').toLowerCase();
}

export function topics(topicPrefix: string, discoveryPrefix: string): Topics {
  return {
    status: `${topicPrefix}/status`,
    event: `${topicPrefix}/event`,
    test: `${topicPrefix}/test`,
    discoveryStatus: `${discoveryPrefix}/status`,
    config: (mac) => `${discoveryPrefix}/device_tracker/netkeep_${mac12(mac)}/config`,
    state: (mac) => `${topicPrefix}/device/${mac12(mac)}/state`,
    attributes: (mac) => `${topicPrefix}/device/${mac12(mac)}/attributes`,
    countConfig: (counter) => `${discoveryPrefix}/sensor/netkeep_${counter}/config`,
    countState: `${topicPrefix}/sensor/netkeep/state`,
  };
}

/** The Home Assistant discovery config of a count sensor (one device, "netkeep", holds them all). */
function countSensorConfig(
  sensor: { readonly counter: string; readonly icon: string },
  t: Topics,
): Record<string, unknown> {
  return {
    name: sensor.counter,
    unique_id: `netkeep_sensor_${sensor.counter}`,
    state_topic: t.countState,
    value_template: `{{ value_json.${sensor.counter} }}`,
    state_class: 'measurement',
    icon: `mdi:${sensor.icon}`,
    availability_topic: t.status,
    device: { identifiers: ['netkeep_sensor'], manufacturer: 'netkeep', name: 'netkeep' },
  };
}

/** The count sensors' state: every counter by name. */
function countState(totals: DeviceTotals): Record<string, number> {
  return Object.fromEntries(countSensors.map(({ counter, group }) => [counter, totals[group]]));
}

/** The Home Assistant discovery config of a device_tracker. */
export function discoveryConfig(
  device: Pick<TrackedDeviceRow, 'devMac' | 'devName' | 'devVendor'>,
  t: Topics,
): Record<string, unknown> {
  const id = `netkeep_${mac12(device.devMac)}`;
  const name = device.devName === '' || device.devName === '(unknown)' ? device.devMac : device.devName;
  return {
    name,
    unique_id: id,
    state_topic: t.state(device.devMac),
    json_attributes_topic: t.attributes(device.devMac),
    payload_home: 'home',
    payload_not_home: 'not_home',
    source_type: 'router',
    availability_topic: t.status,
    device: {
      identifiers: [id],
      connections: [['mac', device.devMac]],
      name,
      manufacturer: device.devVendor,
    },
  };
}

export function deviceAttributes(device: TrackedDeviceRow): Record<string, unknown> {
  return {
    ip: device.devLastIP,
    vendor: device.devVendor,
    last_seen: device.devLastConnection,
    status: deviceStatus(device.devPresentLastScan, device.devAlertDown),
  };
}

const retained = { qos: 1, retain: true } as const;
/** Messages published between turns of the event loop when republishing every device. */
const batch = 200;

export class MqttBridge {
  readonly channel: Channel;
  private readonly topics: Topics;
  private readonly client: MqttClient;
  private readonly unsubscribe: Array<() => void> = [];
  private republishing: Promise<void> | undefined;
  /** Devices whose state to publish, drained in batches (a cycle may flip thousands at once). */
  private readonly changed = new Set<string>();
  private draining = false;
  /** Devices whose config went out on this connection. */
  private readonly configured = new Set<string>();
  private stopped = false;
  private countsPending = false;

  constructor(private readonly options: MqttOptions) {
    this.topics = topics(options.topicPrefix, options.discoveryPrefix);
    this.client = connect(options.url, {
      clientId: `netkeep_${randomBytes(6).toString('hex')}`,
      clean: true,
      connectTimeout: options.timeoutMs,
      reconnectPeriod: options.reconnectMs ?? 5000,
      will: { topic: this.topics.status, payload: Buffer.from('offline'), ...retained },
      // Nothing is queued while disconnected: every connect publishes the full state anyway, and
      // an event delivery fails at once so that the outbox retries it.
      queueQoSZero: false,
      manualConnect: true,
    });
    this.channel = { name: 'mqtt', send: (delivery, signal) => this.sendDelivery(delivery, signal) };
    this.client.on('connect', () => {
      options.logger.info(
        { event: 'mqtt-connected', broker: redactedUrl(options.url) },
        'connected to the MQTT broker',
      );
      this.onConnect();
    });
    this.client.on('error', (err) => {
      options.logger.warn(
        { event: 'mqtt-error', broker: redactedUrl(options.url), error: err.message },
        'MQTT error',
      );
    });
    this.client.on('message', (topic, payload) => {
      if (topic === this.topics.discoveryStatus && payload.toString() === 'online') {
        this.publishCounts();
        this.republish();
      }
    });
  }

  start(): void {
    const feed = this.options.feed;
    if (feed) {
      this.unsubscribe.push(
        feed.subscribe('scan-applied', (applied) => {
          for (const p of applied.presence) this.changed.add(p.mac);
          for (const e of applied.events) if (e.type === 'IP Changed') this.changed.add(e.mac);
          this.publishChanged();
          this.publishCounts();
        }),
        feed.subscribe('device', ({ mac, change }) => {
          if (change === 'deleted') this.clearDevice(mac);
          else this.publishDevice(mac);
          this.countsSoon();
        }),
        feed.subscribe('devices', ({ created, updated }) => {
          for (const mac of created) this.publishDevice(mac);
          for (const mac of updated) this.publishDevice(mac);
        }),
      );
    }
    this.client.connect();
  }

  /** Publishes `offline` (retained), then disconnects. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const off of this.unsubscribe) off();
    if (this.client.connected) {
      await withTimeout(
        this.client.publishAsync(this.topics.status, 'offline', retained),
        this.options.timeoutMs,
      ).catch(() => undefined);
    }
    await this.client.endAsync(true).catch(() => undefined);
  }

  private onConnect(): void {
    this.configured.clear();
    this.publish(this.topics.status, 'online');
    this.publishCounts();
    this.client.subscribe(this.topics.discoveryStatus, { qos: 1 }, (err) => {
      if (err) this.options.logger.warn({ event: 'mqtt-error', error: err.message }, 'MQTT subscribe failed');
    });
    this.republish();
  }

  /**
   * The count sensors' configs and state. The configs go out with every state: a handful of small
   * retained messages, so that a broker that lost them (restarted without persistence) has them
   * again after the next cycle.
   */
  private publishCounts(): void {
    const totals = this.options.totals;
    if (totals === undefined || !this.client.connected) return;
    void totals()
      .then((counts) => {
        if (!this.connected()) return;
        for (const sensor of countSensors)
          this.publish(
            this.topics.countConfig(sensor.counter),
            JSON.stringify(countSensorConfig(sensor, this.topics)),
          );
        this.publish(this.topics.countState, JSON.stringify(countState(counts)));
      })
      .catch((err: unknown) => {
        this.options.logger.error({ event: 'mqtt-error', error: errorMessage(err) }, 'MQTT counts failed');
      });
  }

  /** The counts after API writes, once for all the writes of this turn of the event loop. */
  private countsSoon(): void {
    if (this.countsPending) return;
    this.countsPending = true;
    setImmediate(() => {
      this.countsPending = false;
      if (!this.stopped) this.publishCounts();
    });
  }

  /** Config, state and attributes of every device that is not archived (one run at a time). */
  private republish(): void {
    if (this.republishing) {
      void this.republishing.then(() => {
        this.republish();
      });
      return;
    }
    this.republishing = (async () => {
      let count = 0;
      for (const device of await this.options.readouts.trackedDevices()) {
        if (this.stopped || !this.client.connected) return;
        if (device.devIsArchived === 1) continue;
        this.publishTracked(device);
        if (++count % batch === 0) await yieldToLoop();
      }
    })()
      .catch((err: unknown) => {
        this.options.logger.error({ event: 'mqtt-error', error: errorMessage(err) }, 'MQTT republish failed');
      })
      .finally(() => {
        this.republishing = undefined;
      });
  }

  private publishChanged(): void {
    if (this.draining) return;
    this.draining = true;
    void (async () => {
      while (this.changed.size > 0 && !this.stopped) {
        let count = 0;
        for (const mac of this.changed) {
          this.changed.delete(mac);
          await this.publishDeviceNow(mac, false);
          if (++count === batch) break;
        }
        await yieldToLoop();
      }
    })()
      .catch((err: unknown) => {
        this.options.logger.error({ event: 'mqtt-error', error: errorMessage(err) }, 'MQTT publish failed');
      })
      .finally(() => {
        this.draining = false;
      });
  }

  private publishDevice(mac: string, withConfig = true): void {
    this.publishDeviceNow(mac, withConfig).catch((err: unknown) => {
      this.options.logger.error({ event: 'mqtt-error', error: errorMessage(err) }, 'MQTT publish failed');
    });
  }

  /** Whether the client is connected now (read again after each await). */
  private connected(): boolean {
    return this.client.connected;
  }

  private async publishDeviceNow(mac: string, withConfig: boolean): Promise<void> {
    if (!this.connected()) return; // the next connect publishes everything
    const device = await this.options.readouts.trackedDevice(mac);
    if (device === undefined || !this.connected()) return;
    if (device.devIsArchived === 1) this.clearDevice(mac);
    else this.publishTracked(device, withConfig);
  }

  /**
   * State and attributes; the config too unless it went out since the last (re)publish of all
   * (`withConfig` false: a presence change, which leaves the config as it is).
   */
  private publishTracked(device: TrackedDeviceRow, withConfig = true): void {
    if (withConfig || !this.configured.has(device.devMac)) {
      this.publish(this.topics.config(device.devMac), JSON.stringify(discoveryConfig(device, this.topics)));
      this.configured.add(device.devMac);
    }
    this.publish(this.topics.state(device.devMac), device.devPresentLastScan === 1 ? 'home' : 'not_home');
    this.publish(this.topics.attributes(device.devMac), JSON.stringify(deviceAttributes(device)));
  }

  /** Empty retained messages remove the entity from Home Assistant and the broker's memory. */
  private clearDevice(mac: string): void {
    if (!this.client.connected) return;
    this.configured.delete(mac);
    this.publish(this.topics.config(mac), '');
    this.publish(this.topics.state(mac), '');
    this.publish(this.topics.attributes(mac), '');
  }

  private publish(topic: string, payload: string): void {
    this.client.publish(topic, payload, retained, (err) => {
      if (err)
        this.options.logger.warn({ event: 'mqtt-error', topic, error: err.message }, 'MQTT publish failed');
    });
  }

  private async sendDelivery(delivery: Delivery, signal: AbortSignal): Promise<void> {
    if (!this.client.connected) throw new Error('not connected to the MQTT broker');
    const messages = delivery.test
      ? [
          {
            topic: this.topics.test,
            payload: {
              deliveryId: delivery.deliveryId,
              source: 'netkeep',
              sentAt: delivery.sentAt,
              test: true,
            },
          },
        ]
      : delivery.events.map((event) => ({
          topic: this.topics.event,
          payload: { deliveryId: delivery.deliveryId, ...event },
        }));
    const publishAll = async (): Promise<void> => {
      const acks: Array<Promise<unknown>> = [];
      for (const [i, m] of messages.entries()) {
        acks.push(this.client.publishAsync(m.topic, JSON.stringify(m.payload), { qos: 1 }));
        if ((i + 1) % batch === 0) await yieldToLoop();
      }
      await Promise.all(acks);
    };
    await untilAborted(publishAll(), signal);
  }
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return untilAborted(promise, AbortSignal.timeout(ms));
}
