/** History retention as its own loop (src/scanner/retention.ts), apart from the scan loop. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HistoryRetention } from '../../src/scanner/retention.js';
import { storesOf } from '../helpers/scan-store.js';
import { tempDb } from './helpers.js';

const now = new Date('2025-03-01T12:00:00Z');

test('start() prunes at once; a concurrent call shares the prune; stop() ends it; logs what it deleted', async () => {
  const handle = tempDb();
  try {
    const insert = handle.db.prepare(
      "INSERT INTO Events (eve_MAC, eve_DateTime, eve_EventType) VALUES ('02:00:00:00:00:01', ?, 'Connected')",
    );
    insert.run('2025-01-01 00:00:00'); // 59 days old: pruned at HISTORY_DAYS=30
    insert.run('2025-02-27 00:00:00'); // kept
    const lines: unknown[] = [];
    const logger = { info: (obj: unknown) => lines.push(obj), error: (obj: unknown) => lines.push(obj) };
    const retention = new HistoryRetention({
      presence: storesOf(handle.db).presence,
      days: 30,
      logger,
      now: () => now,
    });
    const first = retention.pruneNow();
    assert.equal(retention.pruneNow(), first, 'a call while a prune runs shares it');
    assert.deepEqual(await first, { events: 1, sessions: 0 });
    assert.deepEqual(lines, [{ event: 'history-pruned', events: 1, sessions: 0 }]);

    insert.run('2024-12-01 00:00:00');
    retention.start(); // the first prune runs on the next turn of the event loop
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(handle.db.prepare('SELECT eve_DateTime FROM Events').pluck().all(), [
      '2025-02-27 00:00:00',
    ]);

    await retention.stop();
    insert.run('2024-12-02 00:00:00');
    assert.deepEqual(await retention.pruneNow(), { events: 0, sessions: 0 }, 'stopped: prunes nothing');
  } finally {
    handle.remove();
  }
});
