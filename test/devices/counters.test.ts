/**
 * The counters' rule in JavaScript (`inCounter`, which the PostgreSQL store's kept counts apply)
 * agrees with the SQLite store's predicates (`deviceCounterBitsSql`) on every combination of the
 * flags the counters read.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from '../../src/db/connection.js';
import { deviceCounters, inCounter } from '../../src/devices/status.js';
import { deviceCounterBitsSql } from '../../src/store/sqlite/status-sql.js';

const flagNames = ['devPresentLastScan', 'devAlertDown', 'devIsArchived', 'devFavorite', 'devIsNew'] as const;

test('inCounter holds exactly where the SQL predicates of the counters do', () => {
  const db = openDatabase(':memory:');
  try {
    const insert = db.prepare(
      `INSERT INTO Devices (devMac, ${flagNames.join(', ')}) VALUES (?, ${flagNames.map(() => '?').join(', ')})`,
    );
    const combos = Array.from({ length: 1 << flagNames.length }, (_, i) =>
      flagNames.map((_, bit) => (i >> bit) & 1),
    );
    combos.forEach((flags, i) => insert.run(`02:00:00:00:00:${i.toString(16).padStart(2, '0')}`, ...flags));
    const bits = db
      .prepare<[], { devMac: string; bits: number }>(`${deviceCounterBitsSql} ORDER BY devMac`)
      .all();
    assert.equal(bits.length, combos.length);
    const reached = new Set<string>();
    bits.forEach(({ bits: sql }, i) => {
      const flags = Object.fromEntries(flagNames.map((name, bit) => [name, combos[i]?.[bit] ?? 0])) as Record<
        (typeof flagNames)[number],
        number
      >;
      deviceCounters.forEach((counter, c) => {
        const expected = (sql & (1 << c)) !== 0;
        assert.equal(inCounter(counter, flags), expected, `${counter} ${JSON.stringify(flags)}`);
        if (expected) reached.add(counter);
      });
    });
    // Every counter holds some combination, so each rule was compared both ways.
    assert.deepEqual([...reached].sort(), [...deviceCounters].sort());
  } finally {
    db.close();
  }
});
