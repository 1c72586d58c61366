/**
 * Home Assistant count sensors on a real mosquitto: retained discovery configs of the six counters
 * beside the device trackers, and their state, which follows GET /devices/totals after each scan
 * cycle (a stand-in arp-scan on loopback) and after API writes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fakeArpScanEnv, fakeArpScanMac, writeFakeArpScan } from '../helpers/fake-arp-scan.js';
import { InProcessServer } from '../helpers/inject.js';
import {
  collector,
  mosquittoSkip,
  startMosquitto,
  type Broker,
  type Collector,
} from '../helpers/mosquitto.js';
import { settledCycle } from '../scanner/helpers.js';

type Json = Record<string, unknown>;

const counters = ['all', 'online', 'down', 'new', 'archived', 'favorites'];
const stateTopic = 'netkeep/sensor/netkeep/state';

describe('MQTT count sensors (Home Assistant)', { skip: mosquittoSkip() }, () => {
  const toolDir = mkdtempSync(join(tmpdir(), 'netkeep-mqtt-counts-'));
  let broker: Broker;
  let watch: Collector;
  let app: InProcessServer;

  /** GET /devices/totals/named as the sensors name the counters. */
  const restCounts = async (): Promise<Json> => {
    const totals = (await app.request('GET', '/devices/totals/named')).json.totals as Record<string, number>;
    return {
      all: totals.devices,
      online: totals.connected,
      down: totals.down,
      new: totals.new,
      archived: totals.archived,
      favorites: totals.favorites,
    };
  };
  const lastState = (): Json | undefined => {
    const last = watch.on(stateTopic).at(-1);
    return last === undefined ? undefined : (JSON.parse(last.payload) as Json);
  };
  const waitForState = async (expected: Json, what: string): Promise<void> => {
    await watch.waitUntil(() => JSON.stringify(lastState()) === JSON.stringify(expected), what);
  };
  before(async () => {
    broker = await startMosquitto();
    watch = await collector(broker, ['netkeep/#', 'homeassistant/#']);
    writeFakeArpScan(toolDir, 2);
    app = await InProcessServer.start({
      MQTT_URL: broker.url,
      ...fakeArpScanEnv(toolDir),
    });
  });
  after(async () => {
    await app.stop();
    await watch.close();
    await broker.stop();
    rmSync(toolDir, { recursive: true, force: true });
  });

  test('retained discovery configs for every counter, and a state that follows the totals', async () => {
    const first = String((await settledCycle(app)).startedAt); // the automatic cycle: hosts 0-1 are new and online
    await waitForState({ all: 2, online: 2, down: 0, new: 2, archived: 0, favorites: 0 }, 'first cycle');
    assert.deepEqual(lastState(), await restCounts());

    for (const counter of counters) {
      const configs = watch.on(`homeassistant/sensor/netkeep_${counter}/config`);
      assert.ok(configs.length > 0, counter);
      const config = JSON.parse(configs.at(-1)?.payload ?? '') as Json;
      assert.deepEqual(
        {
          name: config.name,
          unique_id: config.unique_id,
          state_topic: config.state_topic,
          value_template: config.value_template,
          icon: typeof config.icon,
          device: config.device,
        },
        {
          name: counter,
          unique_id: `netkeep_sensor_${counter}`,
          state_topic: stateTopic,
          value_template: `{{ value_json.${counter} }}`,
          icon: 'string',
          device: { identifiers: ['netkeep_sensor'], manufacturer: 'netkeep', name: 'netkeep' },
        },
      );
    }

    // API writes: a favourite and an archived device.
    const favourite = await app.request('POST', `/device/${fakeArpScanMac(0)}`, { body: { devFavorite: 1 } });
    assert.equal(favourite.status, 200, favourite.text);
    const archived = await app.request('POST', `/device/${fakeArpScanMac(1)}`, {
      body: { devIsArchived: 1 },
    });
    assert.equal(archived.status, 200, archived.text);
    await waitForState({ all: 1, online: 1, down: 0, new: 1, archived: 1, favorites: 1 }, 'API writes');
    assert.deepEqual(lastState(), await restCounts());

    // The next cycle sees the other hosts: two new ones come online, the first two go absent.
    const trigger = await app.request('POST', '/nettools/trigger-scan');
    assert.equal(trigger.status, 200, trigger.text);
    await settledCycle(app, first);
    await waitForState({ all: 3, online: 2, down: 0, new: 3, archived: 1, favorites: 1 }, 'second cycle');
    assert.deepEqual(lastState(), await restCounts());

    // Everything is retained: a subscriber that comes later gets the configs and the last state.
    const late = await collector(broker, ['homeassistant/sensor/#', stateTopic]);
    try {
      await late.waitUntil(
        (messages) => counters.every((c) => messages.some((m) => m.topic.endsWith(`netkeep_${c}/config`))),
        'retained configs',
      );
      await late.waitUntil((messages) => messages.some((m) => m.topic === stateTopic), 'retained state');
      assert.ok(late.messages.every((m) => m.retain));
      assert.deepEqual(JSON.parse(late.on(stateTopic).at(-1)?.payload ?? ''), await restCounts());
    } finally {
      await late.close();
    }
  });
});
