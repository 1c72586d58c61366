/**
 * Local time → UTC for the import: known answers around daylight-saving changes (including a
 * 30-minute one), and the day caches never change an answer (a reader that has seen a whole year
 * agrees with a fresh reader, time by time).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LocalTimeReader } from '../../src/import/local-time.js';

test('known answers: gaps move forward, repeated times take the first occurrence', () => {
  const cases: Array<[string, string, string | null]> = [
    ['Europe/Berlin', '2024-01-15 10:00:00', '2024-01-15 09:00:00'],
    ['Europe/Berlin', '2024-07-01 12:00:00', '2024-07-01 10:00:00'],
    ['Europe/Berlin', '2024-03-31 02:30:00', '2024-03-31 01:30:00'], // gap: read as 03:30 CEST
    ['Europe/Berlin', '2024-03-31 03:00:00', '2024-03-31 01:00:00'],
    ['Europe/Berlin', '2024-10-27 02:30:00', '2024-10-27 00:30:00'], // twice: the CEST one
    ['Europe/Berlin', '2024-10-27 03:00:00', '2024-10-27 02:00:00'],
    ['America/New_York', '2024-03-10 02:15:00', '2024-03-10 07:15:00'], // gap: 03:15 EDT
    ['America/New_York', '2024-11-03 01:30:00', '2024-11-03 05:30:00'], // twice: the EDT one
    ['Australia/Lord_Howe', '2024-10-06 02:15:00', '2024-10-05 15:45:00'], // 30-minute gap: +10:30 before it
    ['Asia/Kathmandu', '2024-05-01 00:00:00', '2024-04-30 18:15:00'],
    ['UTC', '2024-02-29 23:59:59', '2024-02-29 23:59:59'],
    ['Europe/Berlin', '2024-05-01T10:00:00+02:00', '2024-05-01 08:00:00'], // its own offset wins
    ['Europe/Berlin', '2024-05-01 10:00:00.123456', '2024-05-01 08:00:00'],
    ['Europe/Berlin', '2024-05-01', '2024-04-30 22:00:00'],
    ['Europe/Berlin', '2023-02-29 10:00:00', null],
    ['Europe/Berlin', '2024-05-01 24:00:00', null],
    ['Europe/Berlin', 'yesterday', null],
    ['Europe/Berlin', '', null],
  ];
  for (const [zone, local, utc] of cases)
    assert.equal(new LocalTimeReader(zone).toUtc(local), utc, `${zone} ${local}`);
});

test('the caches never change an answer', () => {
  for (const zone of ['Europe/Berlin', 'America/Sao_Paulo', 'Australia/Lord_Howe', 'Pacific/Chatham']) {
    const warm = new LocalTimeReader(zone);
    for (let t = Date.UTC(2023, 0, 1); t < Date.UTC(2025, 0, 1); t += 617 * 60_000) {
      const local = new Date(t).toISOString().slice(0, 19).replace('T', ' ');
      assert.equal(warm.toUtc(local), new LocalTimeReader(zone).toUtc(local), `${zone} ${local}`);
    }
  }
});
