/**
 * The change feed between servers (src/feed-relay.ts), over an in-memory link between two relays:
 * what one server publishes reaches the other's /stream feed (never its own local feed: metrics and
 * MQTT stay per server), a cycle too large for one message arrives whole, in order, in parts that
 * each fit, with its times as Date values again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChangeFeed, type ChangeEvents } from '../src/events.js';
import { relayFeed } from '../src/feed-relay.js';
import type { JobLock, ServerLink } from '../src/store/servers.js';

/** Two links: what one sends, the other's listeners get (as JSON, as NOTIFY carries it). */
function linkedPair(): [ServerLink & { sent: string[] }, ServerLink & { sent: string[] }] {
  const make = (id: string) => {
    const listeners = new Set<(body: unknown) => void>();
    const sent: string[] = [];
    const link = {
      serverId: id,
      sent,
      peer: undefined as undefined | { listeners: Set<(body: unknown) => void> },
      listeners,
      send(body: unknown) {
        const text = JSON.stringify(body);
        sent.push(text);
        for (const listener of link.peer?.listeners ?? []) listener(JSON.parse(text));
        return Promise.resolve();
      },
      onMessage(listener: (body: unknown) => void) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      lock(): JobLock {
        throw new Error('not used');
      },
    };
    return link;
  };
  const a = make('a');
  const b = make('b');
  a.peer = b;
  b.peer = a;
  return [a, b];
}

const quiet = { warn: () => undefined, error: () => undefined };

test("one server's changes reach the other's stream feed, not its local feed", () => {
  const [linkA, linkB] = linkedPair();
  const localA = new ChangeFeed();
  const localB = new ChangeFeed();
  const relayA = relayFeed(localA, linkA, quiet);
  const relayB = relayFeed(localB, linkB, quiet);
  const onStreamB: string[] = [];
  const onLocalB: string[] = [];
  relayB.feed.subscribe('device', ({ mac, change }) => onStreamB.push(`${mac} ${change}`));
  localB.subscribe('device', ({ mac }) => onLocalB.push(mac));
  const onStreamA: string[] = [];
  relayA.feed.subscribe('device', ({ mac }) => onStreamA.push(mac));

  localA.publish('device', { mac: 'aa:00:00:00:00:01', change: 'created' });
  assert.deepEqual(onStreamB, ['aa:00:00:00:00:01 created']);
  assert.deepEqual(onLocalB, [], "B's metrics and MQTT do not count A's change");
  assert.deepEqual(onStreamA, ['aa:00:00:00:00:01'], "A's own stream carries it once");
  assert.equal(linkB.sent.length, 0, 'B never sends back what it heard');
  relayA.stop();
  relayB.stop();
});

test('a large cycle arrives whole and in order, in parts that each fit a message', () => {
  const [linkA, linkB] = linkedPair();
  const localA = new ChangeFeed();
  relayFeed(localA, linkA, quiet);
  const relayB = relayFeed(new ChangeFeed(), linkB, quiet);
  const got: ChangeEvents['scan-applied'][] = [];
  relayB.feed.subscribe('scan-applied', (applied) => got.push(applied));
  const time = new Date('2026-11-26T18:00:00Z');
  const events = Array.from({ length: 500 }, (_, i) => ({
    mac: `02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`,
    ip: `10.0.${i >> 8}.${i & 255}`,
    type: 'Connected',
    time,
    additionalInfo: '',
  }));
  const presence = events.map((e, i) => ({ mac: e.mac, present: i % 2 === 0 }));
  localA.publish('scan-applied', { events, presence });
  assert.ok(linkA.sent.length > 1, 'sent in parts');
  for (const message of linkA.sent) assert.ok(Buffer.byteLength(message) < 7800, 'each part fits');
  assert.deepEqual(
    got.flatMap((part) => part.events),
    events,
  );
  assert.deepEqual(
    got.flatMap((part) => part.presence),
    presence,
  );
  assert.ok(got.every((part) => part.events.every((e) => e.time instanceof Date)));
});
