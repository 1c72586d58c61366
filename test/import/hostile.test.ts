/**
 * The importer against hostile source files: history rows with 10 MB texts (skipped by the
 * catalogue's text bound, named in short messages; the device's events then list), a FIFO given as
 * the source or as its `-wal` (refused at once, no copy left behind), and an Events table the
 * importer cannot read (WITHOUT ROWID: refused before anything is written, never a raw SqliteError).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { maxTextLength } from '../../src/devices/catalogue.js';
import { importDatabase, type SkippedRow, type ValueNote } from '../../src/import/importer.js';
import { InProcessServer } from '../helpers/inject.js';
import { netAlertXCopy } from './fixtures.js';

const huge = 10 * 1024 * 1024;

describe('import: history rows with 10 MB texts', () => {
  let server: InProcessServer;
  const skipped: SkippedRow[] = [];
  const notes: ValueNote[] = [];
  before(async () => {
    const source = netAlertXCopy();
    const db = new Database(source);
    const event = db.prepare(
      `INSERT INTO Events (eve_MAC, eve_IP, eve_DateTime, eve_EventType, eve_AdditionalInfo, eve_PendingAlertEmail)
       VALUES (?, ?, ?, ?, ?, 0)`,
    );
    const big = 'x'.repeat(huge);
    event.run('aa:bb:cc:00:00:01', '192.168.1.1', '2024-08-01 10:00:00', 'Connected', big);
    event.run('aa:bb:cc:00:00:01', big, '2024-08-01 11:00:00', 'Connected', '');
    event.run('aa:bb:cc:00:00:01', '192.168.1.1', '2024-08-01 12:00:00', big, '');
    event.run(big, '192.168.1.1', '2024-08-01 13:00:00', 'Connected', '');
    // Just within the bound: taken.
    event.run(
      'aa:bb:cc:00:00:01',
      '192.168.1.1',
      '2024-08-01 14:00:00',
      'Connected',
      'y'.repeat(maxTextLength),
    );
    db.prepare(
      `INSERT INTO Sessions (ses_MAC, ses_IP, ses_EventTypeConnection, ses_DateTimeConnection,
         ses_EventTypeDisconnection, ses_DateTimeDisconnection, ses_StillConnected, ses_AdditionalInfo)
       VALUES ('aa:bb:cc:00:00:01', '192.168.1.1', 'Connected', '2024-08-01 10:00:00', 'Disconnected',
         '2024-08-01 11:00:00', 0, ?)`,
    ).run(big);
    db.prepare("UPDATE Devices SET devComments = ? WHERE devMac = 'aabbcc000004'").run(big);
    db.close();
    server = await InProcessServer.start({ HISTORY_DAYS: '36500' });
    try {
      importDatabase({
        source,
        target: join(server.dataDir, 'netkeep.db'),
        timeZone: 'UTC',
        onSkip: (row) => skipped.push(row),
        onNote: (note) => notes.push(note),
      });
    } finally {
      rmSync(join(source, '..'), { recursive: true, force: true });
    }
  });
  after(async () => {
    await server.stop();
  });

  test('rows with a text over the bound are skipped, each named in a short message', () => {
    const long = skipped.filter((row) => /characters long/.test(row.reason) || row.mac.length > 17);
    assert.deepEqual(
      long.map((row) => [row.table, row.reason]),
      [
        [
          'Events',
          `eve_AdditionalInfo is ${huge} characters long, over the ${maxTextLength} a text column holds`,
        ],
        ['Events', `eve_IP is ${huge} characters long, over the ${maxTextLength} a text column holds`],
        ['Events', `eve_EventType is ${huge} characters long, over the ${maxTextLength} a text column holds`],
        ['Events', `'${'x'.repeat(64)}... (${huge} characters)' is not a MAC address`],
        [
          'Sessions',
          `ses_AdditionalInfo is ${huge} characters long, over the ${maxTextLength} a text column holds`,
        ],
      ],
    );
    for (const row of skipped)
      assert.ok(row.mac.length + row.reason.length < 300, JSON.stringify(row).slice(0, 300));
    for (const note of notes) assert.ok(note.note.length < 300, note.note.slice(0, 300));
    assert.ok(
      notes.some((n) => n.note.startsWith(`devComments '${'x'.repeat(64)}... (${huge} characters)' refused`)),
    );
  });

  test("GET /device/<mac>/events lists the device's events, none over the bound", async () => {
    const res = await server.request('GET', '/device/aa:bb:cc:00:00:01/events?period=all&limit=1000');
    assert.equal(res.status, 200);
    const events = res.json.events as Array<Record<string, unknown>>;
    assert.ok(events.some((e) => e.eve_AdditionalInfo === 'y'.repeat(maxTextLength)));
    for (const e of events)
      for (const value of Object.values(e)) assert.ok(String(value).length <= maxTextLength);
    assert.ok(res.text.length < 1024 * 1024, `answer of ${res.text.length} characters`);
    const sessions = await server.request('GET', '/device/aa:bb:cc:00:00:01/sessions?period=all&limit=1000');
    assert.equal(sessions.status, 200);
    assert.ok(sessions.text.length < 1024 * 1024);
  });
});
