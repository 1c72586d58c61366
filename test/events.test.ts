/** The change feed: subscribers get what is published, in order; a failing one harms no other. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChangeFeed } from '../src/events.js';

describe('ChangeFeed', () => {
  test('delivers to every subscriber in order, isolates a throwing one, and unsubscribes', () => {
    const errors: unknown[] = [];
    const feed = new ChangeFeed({ error: (obj: unknown) => errors.push(obj) });
    const seen: string[] = [];
    feed.subscribe('device', () => {
      throw new Error('broken subscriber');
    });
    const stop = feed.subscribe('device', (change) => seen.push(`${change.mac} ${change.change}`));
    feed.publish('device', { mac: 'aa:bb:cc:00:00:01', change: 'created' });
    feed.publish('device', { mac: 'aa:bb:cc:00:00:01', change: 'deleted' });
    stop();
    feed.publish('device', { mac: 'aa:bb:cc:00:00:02', change: 'created' });
    assert.deepEqual(seen, ['aa:bb:cc:00:00:01 created', 'aa:bb:cc:00:00:01 deleted']);
    assert.equal(errors.length, 3, 'the throwing subscriber is logged each time');
  });
});
